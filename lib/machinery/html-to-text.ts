// A web page as the text a reader sees: the title, then one line per heading, paragraph and
// list item; scripts, styles, navigation and footers left out; entities decoded.
//
// What a parser that builds a tree gets wrong here, and what this does instead (docs: Under
// the hood, "HTML to text"): a page of 20,000 nested <div>s takes seconds in cheerio, and
// 10 MB of them would take hours, since the work grows with the square of the depth; a
// regular expression over the page can backtrack on an unclosed comment. This reads the page
// once, left to right, as text and tags, without a tree and without recursion, and looks at
// the fetch's clock every TAGS_PER_LOOK tags, so a slow page ends at the time limit.
// The page is read once, left to right, as text and tags, and never built into a tree: the
// time grows with the page's length however the tags nest, and nothing recurses. (Parsers
// that build a tree, cheerio's among them, slow down with the square of the depth: 20,000
// nested <div>s took seconds, a 10 MB page of them would take hours.)
const DROPPED = new Set(["script", "style", "nav", "footer", "noscript", "svg", "template", "iframe"]);
const BLOCKS = new Set(["address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt", "figcaption", "h1", "h2", "h3", "h4", "h5", "h6", "header", "li", "main", "ol", "p", "pre", "section", "table", "tr", "ul"]);
// The marks a reader would see: "## " before a heading, "- " before a list item.
const MARKS: Record<string, string> = { h1: "# ", h2: "## ", h3: "### ", h4: "#### ", h5: "##### ", h6: "###### ", li: "- " };
// Their content is text up to their end tag, never tags (HTML's raw text elements).
const RAW_TEXT = new Set(["script", "style", "noscript", "iframe", "textarea", "title"]);
// No content and no end tag.
const VOID = new Set(["area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"]);
// #region html-to-text
const TAGS_PER_LOOK = 20_000; // tags read between two looks at the clock

/** HTML as a reader sees it: the title first, then one line per heading, paragraph and list item. */
export async function htmlToText(html: string, signal: AbortSignal): Promise<string> {
  const page = new PageText();
  let at = 0; // where the text not read yet starts
  let tags = 0;
  for (let lt = html.indexOf("<"); lt !== -1; lt = html.indexOf("<", Math.max(at, lt + 1))) {
    if (!startsMarkup(html, lt)) continue; // as in "a < b": that "<" is text
    page.text(html.slice(at, lt));
    at = readMarkup(html, lt, page);
    // A long page takes a while: now and then, let the fetch's time limit fire, and stop if it has.
    if (++tags % TAGS_PER_LOOK === 0) {
      await new Promise((resolve) => setImmediate(resolve));
      signal.throwIfAborted();
    }
  }
  page.text(html.slice(at));
  return page.result();
}
// #endregion html-to-text

/** "<p", "</p", "<!--", "<!doctype" and "<?xml" start markup; a "<" before anything else is text. */
function startsMarkup(html: string, lt: number): boolean {
  const next = html.charCodeAt(lt + 1);
  return isLetter(next) || next === 0x21 || next === 0x2f || next === 0x3f; // ! / ?
}

const isLetter = (code: number) => (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a);

/** Read the tag, comment or doctype at `lt` into `page`; where the text after it starts. */
function readMarkup(html: string, lt: number, page: PageText): number {
  const closing = html[lt + 1] === "/";
  const nameStart = lt + (closing ? 2 : 1);
  if (!isLetter(html.charCodeAt(nameStart))) {
    // A comment ("<!-->" is a whole one too), a doctype, "<?xml ...?>" or "</ >": nothing to read.
    return html.startsWith("<!--", lt) ? after(html, "-->", lt + 2) : after(html, ">", lt + 2);
  }
  let nameEnd = nameStart;
  while (nameEnd < html.length && !" \t\n\r\f/>".includes(html[nameEnd])) nameEnd++;
  const name = html.slice(nameStart, nameEnd).toLowerCase();
  const end = endOfTag(html, nameEnd);
  if (end === -1) return html.length; // a tag cut off by the end of the page is dropped, as a browser does
  if (closing && name !== "br") {
    page.close(name);
    return end + 1;
  }
  if (!RAW_TEXT.has(name)) {
    page.open(name);
    return end + 1;
  }
  // A script, a style or the title: everything up to its end tag is its content.
  const endTag = new RegExp(`</${name}`, "ig");
  endTag.lastIndex = end + 1;
  const close = endTag.exec(html)?.index ?? html.length;
  page.raw(name, html.slice(end + 1, close));
  return close === html.length ? close : after(html, ">", close);
}

/** Where the text after the next `marker` starts; the end of the page if none comes. */
function after(html: string, marker: string, from: number): number {
  const found = html.indexOf(marker, from);
  return found === -1 ? html.length : found + marker.length;
}

/** The ">" that ends a tag, past any inside a quoted attribute value; -1 if the page ends first. */
function endOfTag(html: string, from: number): number {
  let valueNext = false; // right after "=", a quote starts a value
  for (let i = from; i < html.length; i++) {
    const c = html[i];
    if (c === ">") return i;
    if ((c === '"' || c === "'") && valueNext) {
      i = html.indexOf(c, i + 1);
      if (i === -1) return -1;
    }
    if (c === "=") valueNext = true;
    else if (!" \t\n\r\f".includes(c)) valueNext = false;
  }
  return -1;
}

/** The text a reader sees, built as the text and tags arrive. */
class PageText {
  private parts: string[] = [];
  private title: string | undefined;
  // The open elements, innermost last. `counts` says how many of each name are open, so an
  // end tag knows at once whether it closes anything; `hidden` counts the open elements that
  // hide their content, `pre` the open <pre>s.
  private stack: string[] = [];
  private counts = new Map<string, number>();
  private hidden = 0;
  private pre = 0;

  text(text: string) {
    if (this.hidden > 0 || text === "") return;
    text = decodeEntities(text);
    // A line break in the HTML source is only a space, except inside <pre>.
    this.parts.push(this.pre > 0 || !text.includes("\n") ? text : text.replace(/\n/g, " "));
  }

  raw(name: string, content: string) {
    if (name === "title") this.title ??= decodeEntities(content).replace(/\s+/g, " ").trim();
    else if (!DROPPED.has(name)) this.text(content); // a <textarea>'s text
  }

  // #region open-elements
  open(name: string) {
    if (this.hidden === 0 && BLOCKS.has(name)) this.parts.push("\n");
    if (this.hidden === 0 && MARKS[name]) this.parts.push(MARKS[name]);
    if (VOID.has(name)) return;
    this.stack.push(name);
    this.counts.set(name, (this.counts.get(name) ?? 0) + 1);
    if (DROPPED.has(name)) this.hidden++;
    if (name === "pre") this.pre++;
  }

  /** An end tag closes its element and any still open inside it; one that matches nothing is ignored. */
  close(name: string) {
    if (!this.counts.get(name)) return;
    let closed: string;
    do {
      closed = this.stack.pop()!;
      this.counts.set(closed, this.counts.get(closed)! - 1);
      if (DROPPED.has(closed)) this.hidden--;
      if (closed === "pre") this.pre--;
      if (this.hidden === 0 && BLOCKS.has(closed)) this.parts.push("\n");
    } while (closed !== name);
  }
  // #endregion open-elements

  result(): string {
    // Layout whitespace goes, including indentation inside <pre>, and so do empty lines: the
    // text matters here, not the look.
    const text = this.parts
      .join("")
      .replace(/[^\S\n]{2,}|[^\S\n ]/g, " ") // a run of spaces, tabs and the like becomes one space
      .replace(/ ?\n\s*/g, "\n") // spaces around a line break go, and so do empty lines
      .trim();
    return this.title ? `${this.title}\n\n${text}` : text;
  }
}

// The character references pages use most; any other is left as written. HTML's Latin-1
// names stand for U+00A0 to U+00FF, in this order.
const LATIN1 =
  "nbsp iexcl cent pound curren yen brvbar sect uml copy ordf laquo not shy reg macr deg plusmn sup2 sup3 acute micro para middot cedil sup1 ordm raquo frac14 frac12 frac34 iquest Agrave Aacute Acirc Atilde Auml Aring AElig Ccedil Egrave Eacute Ecirc Euml Igrave Iacute Icirc Iuml ETH Ntilde Ograve Oacute Ocirc Otilde Ouml times Oslash Ugrave Uacute Ucirc Uuml Yacute THORN szlig agrave aacute acirc atilde auml aring aelig ccedil egrave eacute ecirc euml igrave iacute icirc iuml eth ntilde ograve oacute ocirc otilde ouml divide oslash ugrave uacute ucirc uuml yacute thorn yuml";
const ENTITIES: Record<string, string> = {
  ...Object.fromEntries(LATIN1.split(" ").map((name, i) => [name, String.fromCharCode(0xa0 + i)])),
  amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", ndash: "–", mdash: "—", lsquo: "‘", rsquo: "’", ldquo: "“", rdquo: "”",
  hellip: "…", bull: "•", trade: "™", euro: "€", larr: "←", rarr: "→", minus: "−", le: "≤", ge: "≥", ne: "≠", thinsp: "\u2009",
};

/** `&amp;`, `&eacute;`, `&#233;` and `&#xE9;` as the characters they stand for. */
function decodeEntities(text: string): string {
  if (!text.includes("&")) return text;
  return text.replace(/&(?:#(\d{1,7})|#x([\da-f]{1,6})|([a-z][a-z\d]{1,31}));/gi, (whole, decimal, hex, name) => {
    if (name) return Object.hasOwn(ENTITIES, name) ? ENTITIES[name] : whole;
    const code = decimal ? Number(decimal) : parseInt(hex, 16);
    return code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff) ? String.fromCodePoint(code) : "\uFFFD";
  });
}
