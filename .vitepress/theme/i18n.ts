import type { Lang } from "../curriculum.ts";

/** The page's language as the curriculum names it. */
export const langOf = (lang: string): Lang => (lang.toLowerCase().startsWith("ja") ? "ja" : "en");

export const UI = {
  en: {
    breadcrumb: "Stages",
    coming: "coming",
    loc: (n: number) => `${n} lines of code`,
    tools: (n: number) => (n === 1 ? "1 tool" : `${n} tools`),
    missing: "This stage's file is not in agents/ yet.",
    file: "file",
    layer: "Layer",
  },
  ja: {
    breadcrumb: "ステージ",
    coming: "準備中",
    loc: (n: number) => `コード ${n} 行`,
    tools: (n: number) => `ツール ${n} 個`,
    missing: "このステージのファイルはまだ agents/ にありません。",
    file: "ファイル",
    layer: "レイヤー",
  },
} as const;
