// Every function in the given JavaScript or TypeScript files, with its length in lines, as JSON:
// [{file, line, name, lines}]. Parsed with TypeScript's own parser (labextension's devDependency),
// so declarations, expressions, arrow functions, methods, accessors and constructors all count,
// from the first line of the function to the line of its closing brace.
//
//   node tests/function_lengths.cjs FILE...
const fs = require("fs");
const path = require("path");
const ts = require(path.join(__dirname, "..", "labextension", "node_modules", "typescript"));

function nameOf(node, source) {
  if (ts.isConstructorDeclaration(node)) return "constructor";
  if (node.name) return node.name.getText(source);
  const parent = node.parent;
  if (parent && (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)
    || ts.isPropertyDeclaration(parent))) {
    return parent.name.getText(source);
  }
  return "(anonymous)";
}

const found = [];
for (const file of process.argv.slice(2)) {
  const text = fs.readFileSync(file, "utf8");
  const kind = file.endsWith(".ts") ? ts.ScriptKind.TS : ts.ScriptKind.JS;
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, kind);
  const visit = (node) => {
    if (ts.isFunctionLike(node) && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      found.push({ file, line: first + 1, name: nameOf(node, source), lines: last - first + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}
process.stdout.write(JSON.stringify(found));
