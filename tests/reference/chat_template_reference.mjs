// Reference chat-template renderings from @huggingface/jinja (the Jinja
// interpreter of transformers.js) for Shoal's chat-template agreement test
// (tests/chat/reference_test.sh).
//
//   node chat_template_reference.mjs TEMPLATES.json CASES.json
//
// Run from the source root (paths in TEMPLATES.json are relative to it). Each
// template entry names a raw template file ("template", with "bos_token" and
// "eos_token") or a tokenizer_config.json ("tokenizer_config"), and may add
// "variables". Every case's variables, with the entry's bos/eos tokens and
// variables, are rendered by every template; the output has one JSON line per
// (template, case): {"template", "case", "output"} or, when rendering throws,
// {"template", "case", "error"}.
import { readFileSync } from "node:fs";

import { Template } from "@huggingface/jinja";

// Shoal's ChatTemplate::Render takes an nlohmann::json, whose objects are
// ordered by key; give the reference the same order so `tojson` agrees.
function sortKeys(value) {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortKeys(value[key])]),
  );
}

// "bos_token": "<s>", {"content": "<s>", ...} or null.
function tokenString(token) {
  if (token === null || token === undefined) return "";
  return typeof token === "string" ? token : token.content;
}

function loadTemplate(entry) {
  if (entry.template) {
    return {
      source: readFileSync(entry.template, "utf8"),
      bos_token: entry.bos_token,
      eos_token: entry.eos_token,
    };
  }
  const config = JSON.parse(readFileSync(entry.tokenizer_config, "utf8"));
  let source = config.chat_template;
  if (Array.isArray(source)) source = source.find((t) => t.name === "default").template;
  return {
    source,
    bos_token: tokenString(config.bos_token),
    eos_token: tokenString(config.eos_token),
  };
}

const [templatesPath, casesPath] = process.argv.slice(2);
if (!casesPath) {
  console.error("usage: node chat_template_reference.mjs TEMPLATES.json CASES.json");
  process.exit(2);
}
const entries = JSON.parse(readFileSync(templatesPath, "utf8"));
const cases = JSON.parse(readFileSync(casesPath, "utf8"));

const lines = [];
for (const entry of entries) {
  const { source, bos_token, eos_token } = loadTemplate(entry);
  const template = new Template(source);
  for (const c of cases) {
    const variables = sortKeys({ bos_token, eos_token, ...entry.variables, ...c.variables });
    const line = { template: entry.name, case: c.name };
    try {
      line.output = template.render(variables);
    } catch (e) {
      line.error = e.message;
    }
    lines.push(JSON.stringify(line));
  }
}
process.stdout.write(lines.join("\n") + "\n");
