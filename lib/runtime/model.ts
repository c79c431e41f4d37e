// The model's client: the official SDK, pointed at any Anthropic-compatible API.
//
// Loading the SDK is the slowest thing a stage would do at start (hundreds of modules, most
// of a second under tsx), and a replay or a prompt should answer at once. So the SDK is
// loaded when the first request is made, not when the stage starts. The stage's loop calls
// `client.messages.create(...)` exactly as it would on the SDK's own client.
//
// It is loaded with `require`, the SDK's CommonJS build, not with `import`: on Node 20 each
// ES module a tsx program imports is handed to tsx's loader thread and back (about 3 ms
// each), and the SDK is some 300 modules with its one dependency. Required, they load in
// this thread as plain Node would: most of a second of processor less for every replay.
import { createRequire } from "node:module";
import type Anthropic from "@anthropic-ai/sdk";
import type { Message, MessageCreateParamsNonStreaming } from "@anthropic-ai/sdk/resources/messages";

export interface ModelClient {
  messages: {
    create(request: MessageCreateParamsNonStreaming, options?: { signal?: AbortSignal }): Promise<Message>;
  };
}

export interface ModelSettings {
  /** With no key the program only replays, so a placeholder is used and never sent anywhere. */
  apiKey: string | undefined;
  /** Another provider's address (ANTHROPIC_BASE_URL); undefined for Anthropic itself. */
  baseURL: string | undefined;
}

const require = createRequire(import.meta.url);

/** The SDK's CommonJS build. Its error classes come from the same build (see lib/runtime/program.ts). */
export function sdkModule(): typeof import("@anthropic-ai/sdk") {
  return require("@anthropic-ai/sdk");
}

export function modelClient(settings: ModelSettings): ModelClient {
  let sdk: Promise<Anthropic> | undefined;
  const connect = async () => {
    const { default: Anthropic } = sdkModule();
    return new Anthropic({
      apiKey: settings.apiKey ?? "no-key-replay-only",
      baseURL: settings.baseURL,
      // Looked up at each request, so the replay (msw) can stand in for the API: the SDK
      // would otherwise keep the `fetch` it found when the client was made.
      fetch: (url, init) => fetch(url, init),
    });
  };
  return {
    messages: {
      create: async (request, options) => (await (sdk ??= connect())).messages.create(request, options),
    },
  };
}
