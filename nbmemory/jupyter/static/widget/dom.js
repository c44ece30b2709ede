// Small DOM helpers and number formats the widget's views share. Text goes in as text
// (`textContent`): nothing here parses HTML.

function el(tag, attrs = {}, text) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

const number = (n) => Number(n).toLocaleString("en");
const counted = (n, word) => `${number(n)} ${word}${n === 1 ? "" : "s"}`;

// The views' words (nbmemory.wording.widget_vocabulary(): the panel's, under the same keys),
// from the model the `vocabulary` trait refers to, one per kernel; `render` sets them before it
// draws. marked is set up before that: its words for an image are the vocabulary's.
let vocab = { phrases: { image: "image: {alt}" }, labels: { image: "image" } };
const vocabulary = () => vocab;
function setWords(found) {
  vocab = found;
}

// A sentence of the vocabulary (nbmemory.wording.PHRASES: the panel fills the same ones) with
// its {slots} filled.
function phrase(key, slots = {}) {
  return vocab.phrases[key].replace(/\{(\w+)\}/g, (_, slot) => String(slots[slot] ?? ""));
}
function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

export { bytes, counted, el, number, phrase, setWords, vocabulary };
