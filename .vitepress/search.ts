// Search that finds Japanese words. MiniSearch's default tokenizer splits on spaces and
// punctuation, and a Japanese sentence has neither between its words, so a whole sentence
// became one term and "エージェントループ" found nothing (VitePress issue 4049).
//
// VitePress builds the index in Node with this function, then sends it to the browser as
// text (Function.prototype.toString, revived with `new Function`), where queries go through
// it too. So it must be self-contained: no imports, no names from this module, no helpers.

/** Split text into search terms: Intl.Segmenter's words, plus the parts of snake_case names. */
export const tokenize = (text: string): string[] => {
  const terms: string[] = [];
  const Segmenter = typeof Intl === "object" ? (Intl as { Segmenter?: typeof Intl.Segmenter }).Segmenter : undefined;
  if (!Segmenter) return text.split(/[\s\p{P}\p{S}]+/u).filter((term) => term.length > 0);
  const segmenter = new Segmenter("ja", { granularity: "word" });
  for (const { segment, isWordLike } of segmenter.segment(text)) {
    if (!isWordLike) continue;
    // A lone kana is a particle (は, を, の): it would match almost every Japanese section.
    if (/^[\u3040-\u309f\u30a0-\u30ff]$/.test(segment)) continue;
    terms.push(segment);
    // "read_file" is one word to the segmenter; "read" and "file" should find it too.
    const parts = segment.split(/[_.]+/).filter((part) => part.length > 0);
    if (parts.length > 1) terms.push(...parts);
  }
  return terms;
};
