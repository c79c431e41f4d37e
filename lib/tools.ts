// Calling a stage's tool from outside its loop (the tests, the exercises' checks, the bench),
// the same way whatever the stage's shape: through the dispatch map of s01 to s05 (a handler
// that throws on failure) or through the registry from s06 (the tool's own validation, then
// execute; llmContent is what the model receives). The registry's confirmation step is not
// part of a tool's behaviour, so it is not asked here; s06's own tests cover it.

/** A tool as the callers use it: input in, the text the model would receive out; a failure throws. */
export type ToolCall = (input: Record<string, unknown>) => Promise<string>;

interface RegisteredTool {
  validateToolParams(params: Record<string, unknown>): string | null | undefined;
  execute(params: Record<string, unknown>, signal: AbortSignal): Promise<{ llmContent: unknown }>;
}

/** What a stage module offers for calling its tools: one of the two shapes. */
export interface ToolStage {
  TOOL_HANDLERS?: Record<string, (input: Record<string, unknown>) => unknown>;
  registry?: { getTool(name: string): RegisteredTool | undefined };
}

/** The stage's tool `name` as a function, or undefined when the stage has no such tool. */
export function toolCall(stage: ToolStage, name: string): ToolCall | undefined {
  if (stage.TOOL_HANDLERS) {
    const handler = stage.TOOL_HANDLERS[name];
    return typeof handler === "function" ? async (input) => String(await handler(input)) : undefined;
  }
  const tool = stage.registry?.getTool(name);
  if (!tool) return undefined;
  return async (input) => {
    // As runTool does before validating: null means "not given" (models send it so).
    const params = Object.fromEntries(Object.entries(input).filter(([, value]) => value !== null));
    const problem = tool.validateToolParams(params);
    if (problem) throw new Error(problem);
    const { llmContent } = await tool.execute(params, new AbortController().signal);
    return typeof llmContent === "string" ? llmContent : JSON.stringify(llmContent);
  };
}
