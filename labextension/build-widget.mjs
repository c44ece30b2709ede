// Bundles the widget (src/widget/index.ts, the views it imports and marked) into the one ES
// module anywidget loads: ../nbmemory/jupyter/static/widget.js, shipped in the wheel and
// git-ignored like the built labextension. `npm run build:widget` runs it after type-checking.
import { readFileSync } from 'node:fs';

import { build } from 'esbuild';

const marked = JSON.parse(readFileSync('node_modules/marked/package.json', 'utf8'));

await build({
  entryPoints: ['src/widget/index.ts'],
  outfile: '../nbmemory/jupyter/static/widget.js',
  bundle: true,
  format: 'esm',
  target: 'es2022',
  minify: true,
  legalComments: 'none',
  banner: {
    js: `/*! nbmemory's widget, built from labextension/src/widget; includes marked ${marked.version} (MIT License: static/marked.LICENSE) */`
  },
  logLevel: 'warning'
});
