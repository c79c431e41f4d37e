// Nav and sidebar for each language, from the curriculum list. A stage whose file is not in
// agents/ yet appears as coming, as text with no link, so the site never links a missing page.
import type { DefaultTheme } from "vitepress";
import { LAYERS, STAGES, stageLink, type Lang } from "./curriculum.ts";

const LABELS = {
  en: { start: "Start here", home: "Home", gettingStarted: "Getting started", curriculum: "The curriculum", coming: "coming" },
  ja: { start: "はじめに", home: "ホーム", gettingStarted: "はじめかた", curriculum: "カリキュラム", coming: "準備中" },
} as const;

function prefix(lang: Lang): string {
  return lang === "ja" ? "/ja/" : "/";
}

export function sidebar(lang: Lang, present: ReadonlyMap<string, string>): DefaultTheme.SidebarItem[] {
  const label = LABELS[lang];
  const layers = ([1, 2, 3] as const).map((layer) => ({
    text: LAYERS[layer][lang],
    items: STAGES.filter((stage) => stage.layer === layer).map((stage) =>
      present.has(stage.id)
        ? { text: `${stage.id} ${stage.title[lang]}`, link: stageLink(stage.id, lang) }
        : { text: `${stage.id} ${stage.title[lang]} (${label.coming})` },
    ),
  }));
  return [
    {
      text: label.start,
      items: [
        { text: label.gettingStarted, link: `${prefix(lang)}getting-started` },
        { text: label.curriculum, link: `${prefix(lang)}curriculum` },
      ],
    },
    ...layers,
  ];
}

export function nav(lang: Lang, present: ReadonlyMap<string, string>): DefaultTheme.NavItem[] {
  const label = LABELS[lang];
  const stages = STAGES.filter((stage) => present.has(stage.id)).map((stage) => ({
    text: `${stage.id} ${stage.title[lang]}`,
    link: stageLink(stage.id, lang),
  }));
  return [
    { text: label.gettingStarted, link: `${prefix(lang)}getting-started` },
    { text: label.curriculum, link: `${prefix(lang)}curriculum` },
    { text: lang === "ja" ? "ステージ" : "Stages", items: stages },
  ];
}

