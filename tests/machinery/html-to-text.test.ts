// lib/machinery/html-to-text.ts: a web page as the text a reader sees, which is what web_fetch
// gives the model. The title first, a line per heading, paragraph and list item, with the marks
// a reader would see; scripts, styles, navigation and the like left out; markup read as a
// browser reads it, even when it is broken. And at any size and depth in time that grows with
// the page's length, stopping when the fetch's clock (the signal) runs out. That web_fetch
// hands its pages to this is tested with the stages, in tests/s04_web_fetch.test.ts.
import { describe, expect, it } from "vitest";
import { htmlToText } from "../../lib/machinery/html-to-text.ts";
import { cpuSeconds } from "../helpers.ts";

const MB = 1024 * 1024;
const text = (html: string) => htmlToText(html, new AbortController().signal);

describe("htmlToText", () => {
  it("gives the title first, then a line per heading, paragraph and list item, without nav, script, style, footer, noscript or svg", async () => {
    const page = `<!doctype html><html><head><title> Streams guide </title><style>p { color: red }</style>
      <script>track("view")</script></head><body>
      <nav><a href="/">Home</a> <a href="/api">API</a></nav>
      <h1>Streams</h1><p>A stream delivers data
        in <code>chunks</code>, as it arrives.</p>
      <h2>Reading</h2><ul><li>Call <b>read()</b></li><li>Stop at <em>done</em></li></ul>
      <noscript>Turn on JavaScript</noscript><svg><text>logo</text></svg>
      <footer>© 2025 Example</footer></body></html>`;
    expect(await text(page)).toBe(
      ["Streams guide", "", "# Streams", "A stream delivers data in chunks, as it arrives.", "## Reading", "- Call read()", "- Stop at done"].join("\n"),
    );
  });

  it("marks each heading level and list item as a reader would see them, and keeps only the first title", async () => {
    const page = "<title>One</title><title>Two</title><h1>a</h1><h2>b</h2><h3>c</h3><h4>d</h4><h5>e</h5><h6>f</h6><ol><li>first<ul><li>inner</ul><li>second</ol>";
    expect(await text(page)).toBe(["One", "", "# a", "## b", "### c", "#### d", "##### e", "###### f", "- first", "- inner", "- second"].join("\n"));
  });

  it("gives a page without a title from its first line", async () => {
    expect(await text("<p>just this</p>")).toBe("just this");
    expect(await text("")).toBe("");
  });

  it.each(["script", "style", "nav", "footer", "svg", "template", "iframe", "noscript"])(
    "leaves out a <%s> and all inside it, headings and lists too",
    async (name) => {
      const page = `<p>before</p><${name} class="x"><h1>hidden heading</h1><ul><li>hidden item</ul>hidden text</${name}><p>after</p>`;
      expect(await text(page)).toBe("before\nafter");
    },
  );

  it("leaves out what is nested in a dropped element until the outer one closes", async () => {
    expect(await text("<nav>a<nav>b</nav>still hidden</nav><p>shown</p>")).toBe("shown");
    expect(await text("<footer><div>x</div><template>y</template>z</footer>after")).toBe("after");
  });

  it("reads markup as a browser does: comments, a > inside a quoted attribute, tags inside a script, </br>, any case", async () => {
    const page = [
      "<!-- <p>a comment</p> --><!--><P CLASS=intro>Hello</P>",
      `<a title="1 > 0" href='/x'>a link</a> after <img alt="a > b">it`,
      "<script>document.write('<p>from a script</p>')</SCRIPT><p>line one</br>line two</p>",
      "<textarea>  <b>kept as text</b>  </textarea>",
      "<p>x < y, and a tag cut off at the end:</p><a href=\"unfinished",
    ].join("");
    expect(await text(page)).toBe(["Hello", "a link after it", "line one", "line two", "<b>kept as text</b>", "x < y, and a tag cut off at the end:"].join("\n"));
  });

  it("reads the content of raw text elements (script, style, title, textarea) as text up to their end tag, never as tags", async () => {
    expect(await text("<style>p::after { content: '</p><p>no' }</style><p>yes</p>")).toBe("yes");
    expect(await text("<title>a <b>bold</b> &amp; title</title><p>body</p>")).toBe("a <b>bold</b> & title\n\nbody");
    expect(await text("<textarea><!-- not a comment --></textarea>")).toBe("<!-- not a comment -->");
    // A script that never ends takes the rest of the page with it, as in a browser.
    expect(await text("<p>before</p><script>let x = 1; <p>never shown</p>")).toBe("before");
  });

  it("skips comments, doctypes and processing instructions, and an unclosed comment hides the rest of the page", async () => {
    expect(await text('<?xml version="1.0"?><!DOCTYPE html><!----><p>a<!-- x -- y -->b</p>')).toBe("ab");
    expect(await text("<p>kept</p><!-- never closed <p>lost</p> and more")).toBe("kept");
  });

  it("keeps a < that starts no tag as text: a < b, x <3 y, a <= b, < at the end", async () => {
    expect(await text("<p>a < b</p><p>x <3 y</p><p>a <= b</p><p>ends with <</p>")).toBe("a < b\nx <3 y\na <= b\nends with <");
    expect(await text("if a<1 and c>d")).toBe("if a<1 and c>d");
    // A letter after it does start a tag, in a browser too: this is <b> with two attributes.
    expect(await text("if a<b and c>d")).toBe("if ad");
  });

  it("drops a tag cut off by the end of the page, as a browser does", async () => {
    expect(await text("<p>text</p><div")).toBe("text");
    expect(await text('<p>text</p><a href="unfinished > still in the value')).toBe("text");
    expect(await text("<p>text</p></p")).toBe("text");
  });

  it("decodes character references, and leaves an unknown one as written", async () => {
    const page = "<title>Caf&eacute; &amp; cr&egrave;me</title><p>&lt;b&gt; &quot;q&quot; &#39;s&#x27; 5&nbsp;&times;&nbsp;3 &mdash; &hellip; &#x1F600; &unknown; &#0;</p>";
    expect(await text(page)).toBe("Café & crème\n\n<b> \"q\" 's' 5 × 3 — … 😀 &unknown; \uFFFD");
  });

  it("keeps the lines of a <pre>, and an end tag closes what was left open inside its element", async () => {
    const page = "<pre>\n  first line\n    second   line\n</pre><div><nav>menu<ul><li>Home</div><p>after the nav</p></p></span><ul><li>one<li>two</ul>";
    expect(await text(page)).toBe(["first line", "second line", "after the nav", "- one", "- two"].join("\n"));
  });

  describe("at any size and depth, in time that grows with the page's length", () => {
    it("converts a 10 MB page of paragraphs well within 2 s of CPU", async () => {
      const paragraph = "<p>Entries expire after their <b>TTL</b>, and a full cache evicts the least recently used.</p>\n";
      const count = Math.floor((10 * MB) / paragraph.length);
      const { value, seconds } = await cpuSeconds(() => text(`<title>Big</title>${paragraph.repeat(count)}`));
      expect(value).toBe(`Big\n\n${"Entries expire after their TTL, and a full cache evicts the least recently used.\n".repeat(count)}`.trimEnd());
      // 0.2 s on the 2-core machine this was written on; a conversion quadratic in the page would take hours.
      expect(seconds).toBeLessThan(2);
    });

    // #region deep-nesting
    it("converts 20,000 nested divs, and 210,000 nested inline tags never closed, without recursion", async () => {
      const deep = await cpuSeconds(() => text(`${"<div>".repeat(20_000)}deep inside${"</div>".repeat(20_000)}<p>after</p>`));
      expect(deep.value).toBe("deep inside\nafter");
      expect(deep.seconds).toBeLessThan(0.5); // 0.03 s here; a parser that builds a tree takes seconds
      // Deep, never closed, then end tags that close nothing: each must cost the same at any depth.
      const deeper = await cpuSeconds(() => text(`${"<b><i><span>".repeat(70_000)}bottom${"</a>".repeat(200_000)}`));
      expect(deeper.value).toBe("bottom");
      expect(deeper.seconds).toBeLessThan(2); // 0.08 s here
    });
    // #endregion deep-nesting

    it("converts 10 MB of list items, two million tags none of them closed, within 6 s of CPU", async () => {
      const items = Math.floor((10 * MB) / 5);
      const { value, seconds } = await cpuSeconds(() => text(`<ul>${"<li>x".repeat(items)}`));
      expect(value).toBe("- x\n".repeat(items).trimEnd());
      expect(seconds).toBeLessThan(6); // 1.3 s on the 2-core machine this was written on
    });
  });

  describe("the signal: the fetch's clock", () => {
    const longList = `<ul>${"<li>x".repeat(3 * 2 * MB)}`; // 30 MB: 4 s or more to convert whole

    it("stops a long page at once when the signal has already fired, with the signal's reason", async () => {
      const started = Date.now();
      await expect(htmlToText(longList, AbortSignal.abort(new Error("time is up")))).rejects.toThrow("time is up");
      expect(Date.now() - started).toBeLessThan(1000); // it looks every 20,000 tags: about 10 ms of work; the whole page takes 4 s or more
    });

    // #region clock
    it("stops a long page soon after the signal fires while it works", async () => {
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(new Error("timed out")), 100);
      const started = Date.now();
      try {
        await expect(htmlToText(longList, controller.signal)).rejects.toThrow("timed out");
      } finally {
        clearTimeout(timer);
      }
      // Within a second or two of the signal on a busy machine; a conversion that never let the
      // timer fire would answer only at its end, seconds later (12 s on a 2-core machine).
      expect(Date.now() - started).toBeLessThan(2500);
    });
    // #endregion clock
  });
});
