// Drives `moepage serve` with the official openai npm client: lists the models, then streams and
// fetches whole a completion and a chat completion. Prints one JSON object with what it got;
// tests/serve/test_serve_openai_node.py starts the server and checks it.
// usage: node openai_client.mjs BASE_URL API_KEY PROMPT CHAT_MESSAGE MAX_TOKENS
import OpenAI from "openai";

const [baseURL, apiKey, prompt, chatMessage, maxTokensText] = process.argv.slice(2);
const maxTokens = Number(maxTokensText);
const client = new OpenAI({ baseURL, apiKey, timeout: 60000, maxRetries: 0 });

const models = await client.models.list();
const model = models.data[0].id;

let completionStreamed = "";
let completionFinish = null;
let completionUsage = null;
const completionStream = await client.completions.create({ model, prompt, max_tokens: maxTokens, stream: true });
for await (const chunk of completionStream) {
  completionStreamed += chunk.choices[0]?.text ?? "";
  completionFinish = chunk.choices[0]?.finish_reason ?? completionFinish;
  completionUsage = chunk.usage ?? completionUsage;
}
const completionWhole = await client.completions.create({ model, prompt, max_tokens: maxTokens });

const messages = [{ role: "user", content: chatMessage }];
let chatStreamed = "";
let chatFinish = null;
const chatStream = await client.chat.completions.create({ model, messages, max_tokens: maxTokens, stream: true });
for await (const chunk of chatStream) {
  chatStreamed += chunk.choices[0]?.delta?.content ?? "";
  chatFinish = chunk.choices[0]?.finish_reason ?? chatFinish;
}
const chatWhole = await client.chat.completions.create({ model, messages, max_tokens: maxTokens, temperature: 0 });

let refused = null;
try {
  await client.completions.create({ model, prompt, max_tokens: -3 });
} catch (e) {
  refused = { status: e.status, message: e.message };
}

console.log(JSON.stringify({
  model,
  completionStreamed,
  completionFinish,
  completionUsage,
  completionWhole: completionWhole.choices[0].text,
  completionWholeUsage: completionWhole.usage,
  chatStreamed,
  chatFinish,
  chatWhole: chatWhole.choices[0].message.content,
  refused,
}));
