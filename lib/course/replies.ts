// Model replies, scenarios and tool results, written briefly in the exact shape of the
// Messages API: what the tests and the exercises' checks write their recorded sessions with,
// and how they read what the model received.
import type { ContentBlock, Message, MessageCreateParams, ToolResultBlockParam } from "@anthropic-ai/sdk/resources/messages";
import type { Scenario } from "./scenario.ts";

let counter = 0;
const nextId = (prefix: string) => `${prefix}_${String(++counter).padStart(3, "0")}`;

/** Model replies, written briefly. */
export const reply = {
  /** A reply that asks for tools (stop_reason "tool_use"), optionally with some text first. */
  tools(calls: { name: string; input: Record<string, unknown>; id?: string }[], text?: string): Message {
    const content: ContentBlock[] = [];
    if (text) content.push({ type: "text", text, citations: null } as ContentBlock);
    for (const call of calls) {
      content.push({ type: "tool_use", id: call.id ?? nextId("toolu"), name: call.name, input: call.input } as ContentBlock);
    }
    return message(content, "tool_use");
  },
  /** A reply that ends the turn with text. */
  text(text: string, stop: Message["stop_reason"] = "end_turn"): Message {
    return message([{ type: "text", text, citations: null } as ContentBlock], stop);
  },
};

function message(content: ContentBlock[], stop_reason: Message["stop_reason"]): Message {
  return {
    id: nextId("msg"),
    type: "message",
    role: "assistant",
    model: "claude-sonnet-5-5",
    content,
    stop_reason,
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 10 },
  } as Message;
}

/** A scenario from replies, with one prompt per reply that ends a turn. */
export function scenarioOf(replies: Message[], extra: Partial<Scenario> = {}): Scenario {
  const turns = replies.filter((r) => r.stop_reason !== "tool_use").length;
  return { description: "written by hand", prompts: Array.from({ length: turns }, (_, i) => `prompt ${i + 1}`), replies, ...extra };
}

/** The tool results carried by request `index` (its last user message), in order; none if there is no such request. */
export function toolResults(requests: MessageCreateParams[], index: number): ToolResultBlockParam[] {
  const last = requests[index]?.messages.at(-1);
  if (!last || last.role !== "user" || !Array.isArray(last.content)) return [];
  return last.content.filter((b): b is ToolResultBlockParam => b.type === "tool_result");
}

/** The text of a tool result's content. */
export function resultText(result: ToolResultBlockParam): string {
  const { content } = result;
  if (typeof content === "string") return content;
  return (content ?? []).map((b) => ("text" in b ? b.text : "")).join("");
}
