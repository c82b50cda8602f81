// The official OpenAI Node SDK (npm `openai`, pinned in package.json)
// against a Shoal gateway: what a real client sends and parses, not what
// Shoal's own tests would write. Run by tests/integration/openai_sdk_test.cc:
//
//   node tests/openai_sdk/check.mjs http://127.0.0.1:PORT/v1 CHAT_MODEL EMBED_MODEL
//
// Prints "ok <check>" per check that passed; the first that fails throws
// (exit status 1, with the SDK's error or the assertion).
import assert from "node:assert/strict";
import OpenAI, { toFile } from "openai";

const [baseURL, chatModel, embedModel] = process.argv.slice(2);
const client = new OpenAI({ apiKey: "unused", baseURL, maxRetries: 0, timeout: 120000 });
const ok = (name) => console.log(`ok ${name}`);

const weather = {
  type: "object",
  properties: { city: { type: "string", maxLength: 12 }, unit: { enum: ["celsius", "fahrenheit"] } },
  required: ["city", "unit"],
  additionalProperties: false,
};
const tools = [{ type: "function", function: { name: "get_weather", description: "The weather now", parameters: weather } }];
const question = [{ role: "user", content: "What is the weather in Oslo?" }];

function checkWeather(args) {
  const parsed = JSON.parse(args);
  assert.equal(typeof parsed.city, "string");
  // maxLength counts code points (JSON Schema); a string's .length counts UTF-16 units.
  assert.ok([...parsed.city].length <= 12, args);
  assert.ok(["celsius", "fahrenheit"].includes(parsed.unit), args);
  return parsed;
}

// response_format json_schema (strict): the content parses and fits.
{
  const schema = {
    type: "object",
    properties: { title: { type: "string", maxLength: 8 }, kind: { enum: ["film", "book"] } },
    required: ["title", "kind"],
    additionalProperties: false,
  };
  const r = await client.chat.completions.create({
    model: chatModel,
    messages: [{ role: "user", content: "Describe a work as JSON." }],
    response_format: { type: "json_schema", json_schema: { name: "work", schema, strict: true } },
    max_tokens: 200,
  });
  assert.equal(r.choices[0].finish_reason, "stop");
  const doc = JSON.parse(r.choices[0].message.content);
  assert.deepEqual(Object.keys(doc).sort(), ["kind", "title"]);
  assert.ok(["film", "book"].includes(doc.kind));
  ok("response_format json_schema");
}

// tools with tool_choice "required", and n = 2: two choices, each a call.
let call;
{
  const r = await client.chat.completions.create({
    model: chatModel,
    messages: question,
    tools,
    tool_choice: "required",
    parallel_tool_calls: false,
    n: 2,
    temperature: 1,
    seed: 7,
    max_tokens: 200,
  });
  assert.equal(r.choices.length, 2);
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1]);
  for (const choice of r.choices) {
    assert.equal(choice.finish_reason, "tool_calls");
    assert.equal(choice.message.tool_calls.length, 1);
    const c = choice.message.tool_calls[0];
    assert.equal(c.type, "function");
    assert.equal(c.function.name, "get_weather");
    assert.ok(c.id.length > 0);
    checkWeather(c.function.arguments);
  }
  call = r.choices[0].message.tool_calls[0];
  ok("tools required, n 2");
}

// Streamed tool calls, assembled by the SDK's own stream helper, with usage.
{
  const stream = client.chat.completions.stream({
    model: chatModel,
    messages: question,
    tools,
    tool_choice: { type: "function", function: { name: "get_weather" } },
    max_tokens: 200,
    stream_options: { include_usage: true },
  });
  let fragments = 0;
  stream.on("tool_calls.function.arguments.delta", () => fragments++);
  const final = await stream.finalChatCompletion();
  const c = final.choices[0];
  assert.equal(c.finish_reason, "tool_calls");
  assert.equal(c.message.tool_calls[0].function.name, "get_weather");
  checkWeather(c.message.tool_calls[0].function.arguments);
  assert.ok(fragments >= 1);
  assert.ok(final.usage.completion_tokens > 0);
  ok("streamed tool call");
}

// The call and the tool's answer go back in.
{
  const r = await client.chat.completions.create({
    model: chatModel,
    messages: [
      ...question,
      { role: "assistant", content: null, tool_calls: [call] },
      { role: "tool", tool_call_id: call.id, content: "-3 and snowing" },
    ],
    tools,
    max_tokens: 8,
  });
  assert.ok(r.usage.prompt_tokens > 20);
  assert.ok(["stop", "length", "tool_calls"].includes(r.choices[0].finish_reason));
  ok("tool message");
}

// Embeddings as the SDK asks for them (base64, decoded by the SDK).
{
  const r = await client.embeddings.create({ model: embedModel, input: ["a nightly job", "another"] });
  assert.equal(r.data.length, 2);
  assert.ok(r.data[0].embedding.length > 0);
  assert.ok(r.data[0].embedding.every(Number.isFinite));
  ok("embeddings");
}

// A Batch API job: upload, create, follow, read the output file.
{
  const lines = [0, 1, 2].map((i) =>
    JSON.stringify({ custom_id: `line-${i}`, method: "POST", url: "/v1/embeddings", body: { model: embedModel, input: `text ${i}` } }),
  );
  const file = await client.files.create({ file: await toFile(Buffer.from(lines.join("\n") + "\n"), "in.jsonl"), purpose: "batch" });
  assert.equal(file.purpose, "batch");
  let batch = await client.batches.create({ input_file_id: file.id, endpoint: "/v1/embeddings", completion_window: "24h" });
  for (let i = 0; i < 600 && !["completed", "failed", "expired", "cancelled"].includes(batch.status); ++i) {
    await new Promise((done) => setTimeout(done, 100));
    batch = await client.batches.retrieve(batch.id);
  }
  assert.equal(batch.status, "completed");
  assert.deepEqual(batch.request_counts, { total: 3, completed: 3, failed: 0 });
  const text = await (await client.files.content(batch.output_file_id)).text();
  const ids = text.trim().split("\n").map((l) => JSON.parse(l).custom_id).sort();
  assert.deepEqual(ids, ["line-0", "line-1", "line-2"]);
  const listed = [];
  for await (const b of client.batches.list()) listed.push(b.id);
  assert.ok(listed.includes(batch.id));
  ok("batch job");
}
