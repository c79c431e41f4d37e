// The docs site: English at the root, Japanese under /ja/, pages in docs/.
// Nav, sidebar and UI labels per language, from the curriculum list. Every stage has a page:
// its own (docs/sNN.md) once written, a planned page (docs/[stage].md) until then; each
// stage with a parent has a diff page (docs/diff/[stage].md). Pages others write (exercises,
// the workshop, the benchmarks) are linked only when their file exists.
// See .vitepress/README.md for how a stage's page, diagram, session notes and diff fit in.
import { readFileSync } from "node:fs";
import { defineConfig, type HeadConfig } from "vitepress";
import { PAGE_STAGES, stageById, type Lang } from "./curriculum.ts";
import { stagePageOf, workbookMarkdown } from "./markdown.ts";
import { nav, sidebar } from "./navigation.ts";
import { presentStages } from "./regions.ts";
import { tokenize } from "./search.ts";
import { pageSession } from "./sessions.ts";
import { describePage, diffStages, optionalPages, plannedStages, readRepository } from "./site.ts";
import { REPO_ROOT } from "../lib/course/stages.ts";

const present = presentStages(REPO_ROOT);
const repository = readRepository(REPO_ROOT);
const pkg = JSON.parse(readFileSync(`${REPO_ROOT}/package.json`, "utf8")) as { description: string };

/** What the theme's components need to know about the repository, per language. */
function workbook(lang: Lang) {
  return {
    present: [...present.keys()],
    planned: plannedStages(REPO_ROOT, lang).map((s) => s.id),
    diffs: diffStages(REPO_ROOT),
    optional: optionalPages(REPO_ROOT, lang),
    repository,
  };
}

/** The stages whose own page is written in `lang` (the others show a planned page, marked so). */
const written = (lang: Lang) => {
  const planned = plannedStages(REPO_ROOT, lang).map((s) => s.id);
  return new Map(PAGE_STAGES.filter((s) => !planned.includes(s.id)).map((s) => [s.id, s.file]));
};

const siteNav = (lang: Lang) => ({
  nav: nav(lang, written(lang), optionalPages(REPO_ROOT, lang)),
  sidebar: sidebar(lang, written(lang), optionalPages(REPO_ROOT, lang)),
  workbook: workbook(lang),
  ...(repository ? { socialLinks: [{ icon: "github", link: repository.web }] } : {}),
});

export default defineConfig({
  srcDir: "docs",
  title: "Agent Workbook",
  lastUpdated: false,
  cleanUrls: false,
  markdown: {
    lineNumbers: false,
    config: (md) => workbookMarkdown(md, REPO_ROOT),
  },
  head: [
    ["link", { rel: "icon", type: "image/svg+xml", href: "/favicon.svg" }],
    ["meta", { name: "theme-color", content: "#b4530b" }],
  ],
  async transformPageData(pageData) {
    const planned = pageData.params?.planned === true;
    const diff = /^(ja\/)?diff\/(s\d\d|full)\.md$/.exec(pageData.relativePath);
    const page = stagePageOf(pageData.relativePath);
    const lang: Lang = pageData.relativePath.startsWith("ja/") ? "ja" : "en";
    const frontmatter = { ...pageData.frontmatter };
    let title = pageData.title;
    if (page) {
      // A stage page's title lives in the curriculum list, not in the page: <StageHeader> shows it.
      const stage = stageById(page.id);
      title = `${stage.id}: ${stage.title[lang]}`;
      frontmatter.pageClass = planned ? "stage-page planned-page" : "stage-page";
      // The outline moves to the bar above the page, so the code can use the whole width.
      frontmatter.aside = false;
      if (!planned && present.has(page.id)) frontmatter.session = await pageSession(REPO_ROOT, page.id);
    } else if (diff) {
      title = lang === "ja" ? `${diff[2]}: ${pageData.params?.parent} からの変更` : `${diff[2]}: what changed from ${pageData.params?.parent}`;
      frontmatter.pageClass = "stage-page diff-page";
      frontmatter.aside = false;
    }
    const description = frontmatter.description ?? describePage(REPO_ROOT, pageData.relativePath, pageData.params) ?? pageData.description;
    return { title, frontmatter, description };
  },
  // Social previews: the page's own title and description.
  transformHead({ pageData, title, description, siteConfig }) {
    const ja = pageData.relativePath.startsWith("ja/");
    const tags: HeadConfig[] = [
      ["meta", { property: "og:type", content: "website" }],
      ["meta", { property: "og:site_name", content: siteConfig.site.title }],
      ["meta", { property: "og:title", content: title }],
      ["meta", { property: "og:description", content: description }],
      ["meta", { property: "og:locale", content: ja ? "ja_JP" : "en_US" }],
      ["meta", { name: "twitter:card", content: "summary" }],
      ["meta", { name: "twitter:title", content: title }],
      ["meta", { name: "twitter:description", content: description }],
    ];
    return tags;
  },
  locales: {
    root: {
      label: "English",
      lang: "en-US",
      description: pkg.description,
      themeConfig: {
        ...siteNav("en"),
        outline: { level: [2, 3], label: "On this page" },
        docFooter: { prev: "Previous", next: "Next" },
      },
    },
    ja: {
      label: "日本語",
      lang: "ja",
      link: "/ja/",
      title: "Agent Workbook",
      description: "Claude Code のようなコーディングエージェントを、TypeScript で仕組みを1つずつ足しながら作ります。",
      themeConfig: {
        ...siteNav("ja"),
        outline: { level: [2, 3], label: "このページの内容" },
        docFooter: { prev: "前のページ", next: "次のページ" },
        darkModeSwitchLabel: "外観",
        lightModeSwitchTitle: "ライトモードにする",
        darkModeSwitchTitle: "ダークモードにする",
        sidebarMenuLabel: "メニュー",
        returnToTopLabel: "ページの先頭へ",
        langMenuLabel: "言語を切り替える",
        skipToContentLabel: "本文へ移動",
        notFound: {
          title: "ページが見つかりません",
          quote: "リンクが古いか、まだ書かれていないページかもしれません。",
          linkLabel: "ホームへ",
          linkText: "ホームに戻る",
        },
      },
    },
  },
  themeConfig: {
    search: {
      provider: "local",
      options: {
        // Sent to the browser as text, so `tokenize` is self-contained (see search.ts).
        miniSearch: {
          options: { tokenize },
          searchOptions: { fuzzy: 0.2, prefix: true, boost: { title: 4, text: 2, titles: 1 } },
        },
        // Build-time only (keys starting with "_" stay in Node): index a stage page's title and
        // motto, which <StageHeader> renders in the browser and the Markdown does not contain.
        _render(src, env, md) {
          const html = md.render(src, env);
          if (env.frontmatter?.search === false) return "";
          const page = stagePageOf(env.relativePath);
          if (!page) return html;
          const stage = stageById(page.id);
          const lang: Lang = page.lang;
          return `<h1>${stage.id}: ${stage.title[lang]} <a class="header-anchor" href="#"></a></h1><p>${stage.motto[lang]}</p>${html}`;
        },
        locales: {
          ja: {
            translations: {
              button: { buttonText: "検索", buttonAriaLabel: "検索" },
              modal: {
                displayDetails: "詳しく表示",
                resetButtonTitle: "検索をクリア",
                backButtonTitle: "検索を閉じる",
                noResultsText: "見つかりませんでした",
                footer: { selectText: "選択", navigateText: "移動", closeText: "閉じる" },
              },
            },
          },
        },
      },
    },
  },
});
