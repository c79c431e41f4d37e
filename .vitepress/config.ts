// The docs site: English at the root, Japanese under /ja/, pages in docs/.
// Nav, sidebar and UI labels per language; the sidebar comes from the curriculum list, with
// stages whose file is not in agents/ yet shown as coming (no link to a missing page).
import { defineConfig } from "vitepress";
import { STAGES, type Lang } from "./curriculum.ts";
import { nav, sidebar } from "./navigation.ts";
import { tokenize } from "./search.ts";
import { existingStages } from "../lib/stages.ts";

const existing = existingStages();

/** "s02.md" or "ja/s02.md" -> the stage and the page's language. */
function stagePage(relativePath: string): { stage: (typeof STAGES)[number]; lang: Lang } | undefined {
  const match = /^(ja\/)?(s\d\d)\.md$/.exec(relativePath);
  const stage = match && STAGES.find((s) => s.id === match[2]);
  return stage ? { stage, lang: match[1] ? "ja" : "en" } : undefined;
}

export default defineConfig({
  srcDir: "docs",
  title: "Agent Workbook",
  lastUpdated: false,
  cleanUrls: false,
  markdown: { lineNumbers: false },
  // A stage page's title lives in the curriculum list, not in the page: <StageHeader> shows it.
  transformPageData(pageData) {
    const page = stagePage(pageData.relativePath);
    if (page) pageData.title = `${page.stage.id}: ${page.stage.title[page.lang]}`;
  },
  locales: {
    root: {
      label: "English",
      lang: "en-US",
      description: "Build a coding agent like Claude Code in TypeScript, one mechanism at a time.",
      themeConfig: {
        nav: nav("en", existing),
        sidebar: sidebar("en", existing),
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
        nav: nav("ja", existing),
        sidebar: sidebar("ja", existing),
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
          const page = stagePage(env.relativePath);
          if (!page) return html;
          const { stage, lang } = page;
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
