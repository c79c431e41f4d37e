// Nav and sidebar for each language, from the curriculum list. Every stage links to its page:
// its own once written, a planned page until then (marked as such). The workshop, the
// exercises and the benchmarks, which others write, appear only when their page exists.
import type { DefaultTheme } from "vitepress";
import { CAPSTONE, LAYER_ORDER, LAYERS, MACHINERY, machineryLink, STAGES, stageLink, type Lang, type Stage } from "./curriculum.ts";

const LABELS = {
  en: {
    start: "Start here", gettingStarted: "Getting started", providers: "Models and providers", curriculum: "The curriculum", planned: "planned",
    stages: "Stages", capstone: "Capstone", workshop: "Workshop", instructors: "For instructors", exercise: (id: string) => `${id} exercise`,
    more: "More", benchmarks: "Benchmarks", underTheHood: "Under the hood", overview: "What lives in lib/machinery",
  },
  ja: {
    start: "はじめに", gettingStarted: "はじめかた", providers: "モデルとプロバイダ", curriculum: "カリキュラム", planned: "準備中",
    stages: "ステージ", capstone: "総仕上げ", workshop: "ワークショップ", instructors: "講師の方へ", exercise: (id: string) => `${id} の演習`,
    more: "その他", benchmarks: "ベンチマーク", underTheHood: "舞台裏", overview: "lib/machinery の中身",
  },
} as const;

/** Which of the pages others write exist (see site.ts optionalPages). */
export interface Optional {
  exercises: string[];
  workshop: boolean;
  benchmarks: boolean;
}
const NONE: Optional = { exercises: [], workshop: false, benchmarks: false };

function prefix(lang: Lang): string {
  return lang === "ja" ? "/ja/" : "/";
}

/** `written`: the stages whose own page exists; the others are marked as planned. */
function stageItem(stage: Stage, lang: Lang, present: ReadonlyMap<string, string>): DefaultTheme.SidebarItem {
  const text = `${stage.id === CAPSTONE.id ? "" : `${stage.id} `}${stage.title[lang]}`;
  return { text: present.has(stage.id) ? text : `${text} (${LABELS[lang].planned})`, link: stageLink(stage.id, lang) };
}

export function sidebar(lang: Lang, present: ReadonlyMap<string, string>, optional: Optional = NONE): DefaultTheme.SidebarItem[] {
  const label = LABELS[lang];
  const layers = LAYER_ORDER.map((layer) => ({
    text: LAYERS[layer][lang],
    items: STAGES.filter((stage) => stage.layer === layer).map((stage) => stageItem(stage, lang, present)),
  }));
  const workshop = [
    ...(optional.workshop ? [{ text: label.instructors, link: `${prefix(lang)}workshop` }] : []),
    ...optional.exercises.map((id) => ({ text: label.exercise(id), link: `${prefix(lang)}exercises/${id}` })),
  ];
  return [
    {
      text: label.start,
      items: [
        { text: label.gettingStarted, link: `${prefix(lang)}getting-started` },
        { text: label.providers, link: `${prefix(lang)}providers` },
        { text: label.curriculum, link: `${prefix(lang)}curriculum` },
      ],
    },
    ...layers,
    { text: label.capstone, items: [stageItem(CAPSTONE, lang, present)] },
    {
      text: label.underTheHood,
      collapsed: true,
      items: [
        { text: label.overview, link: `${prefix(lang)}under-the-hood/` },
        ...MACHINERY.map((module) => ({ text: module.title[lang], link: machineryLink(module.id, lang) })),
      ],
    },
    ...(workshop.length > 0 ? [{ text: label.workshop, collapsed: true, items: workshop }] : []),
    ...(optional.benchmarks ? [{ text: label.more, items: [{ text: label.benchmarks, link: `${prefix(lang)}benchmarks` }] }] : []),
  ];
}

export function nav(lang: Lang, present: ReadonlyMap<string, string>, optional: Optional = NONE): DefaultTheme.NavItem[] {
  const label = LABELS[lang];
  const stages = [...STAGES, CAPSTONE].map((stage) => {
    const item = stageItem(stage, lang, present);
    return { text: item.text!, link: item.link! };
  });
  return [
    { text: label.gettingStarted, link: `${prefix(lang)}getting-started` },
    { text: label.curriculum, link: `${prefix(lang)}curriculum` },
    { text: label.stages, items: stages },
    ...(optional.workshop ? [{ text: label.workshop, link: `${prefix(lang)}workshop` }] : []),
  ];
}
