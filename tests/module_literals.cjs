// The literals of JavaScript modules, as JSON: [{file, literals, errors}]. Strings, template
// pieces and regular expressions, each as written, in order; `errors` counts parse errors.
// Parsed with TypeScript's own parser (labextension's devDependency).
//
//   node tests/module_literals.cjs FILE...
const fs = require("fs");
const path = require("path");
const ts = require(path.join(__dirname, "..", "labextension", "node_modules", "typescript"));

const LITERALS = new Set([
  ts.SyntaxKind.StringLiteral,
  ts.SyntaxKind.NoSubstitutionTemplateLiteral,
  ts.SyntaxKind.TemplateHead,
  ts.SyntaxKind.TemplateMiddle,
  ts.SyntaxKind.TemplateTail,
  ts.SyntaxKind.RegularExpressionLiteral,
]);

const found = [];
for (const file of process.argv.slice(2)) {
  const text = fs.readFileSync(file, "utf8");
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS);
  const literals = [];
  const visit = (node) => {
    if (LITERALS.has(node.kind)) literals.push(node.getText(source));
    ts.forEachChild(node, visit);
  };
  visit(source);
  found.push({ file, literals, errors: source.parseDiagnostics.length });
}
process.stdout.write(JSON.stringify(found));
