// Rebuilds what quizbank vendors into static/vendor/ (run `npm ci && npm run build` here):
// codemirror.js, the editor bundled once by esbuild, with the licences of every package in it;
// htmx.min.js, copied from the htmx.org package, with its licence; and axe-core for the accessibility
// test (practice/tests/e2e/vendor/, never served: the test injects it into each page it checks).
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from "node:fs";
import * as esbuild from "esbuild";

const here = new URL(".", import.meta.url).pathname;
const vendor = `${here}../static/vendor/`;
mkdirSync(vendor, { recursive: true });

const result = await esbuild.build({
  absWorkingDir: here,
  entryPoints: ["src/editor.js"],
  bundle: true,
  minify: true,
  format: "iife",
  target: ["es2020"],
  outfile: `${vendor}codemirror.js`,
  metafile: true,
  legalComments: "none",
  banner: {
    js: "/*! quizbank's code editor: CodeMirror 6 (MIT), bundled by frontend/build.mjs; licences in codemirror.LICENSES.txt */",
  },
});

function licence(name) {
  const dir = `${here}node_modules/${name}/`;
  const meta = JSON.parse(readFileSync(`${dir}package.json`, "utf8"));
  const file = ["LICENSE", "LICENSE.md", "LICENSE.txt", "LICENCE"].find((f) => existsSync(dir + f));
  const text = file ? readFileSync(dir + file, "utf8").trim() : `License: ${meta.license}`;
  return `${name}@${meta.version} (${meta.license})\n\n${text}\n`;
}

const packages = new Set();
for (const input of Object.keys(result.metafile.inputs)) {
  const match = input.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\//);
  if (match) packages.add(match[1]);
}
const rule = `\n${"-".repeat(72)}\n\n`;
writeFileSync(
  `${vendor}codemirror.LICENSES.txt`,
  "The licences of the packages bundled into codemirror.js.\n" + rule +
    [...packages].sort().map(licence).join(rule),
);

copyFileSync(`${here}node_modules/htmx.org/dist/htmx.min.js`, `${vendor}htmx.min.js`);
writeFileSync(`${vendor}htmx.LICENSE.txt`, licence("htmx.org"));

// KaTeX renders the formulas of prompts and answers ($...$, $$...$$): its script, the auto-render
// extension, the stylesheet and its fonts, copied as they ship.
const katex = `${here}node_modules/katex/dist/`;
mkdirSync(`${vendor}katex/fonts`, { recursive: true });
for (const file of ["katex.min.js", "katex.min.css", "contrib/auto-render.min.js"]) {
  copyFileSync(katex + file, `${vendor}katex/${file.replace("contrib/", "")}`);
}
for (const font of readdirSync(`${katex}fonts`).filter((f) => f.endsWith(".woff2"))) {
  copyFileSync(`${katex}fonts/${font}`, `${vendor}katex/fonts/${font}`);
}
writeFileSync(`${vendor}katex/LICENSE.txt`, licence("katex"));

// axe-core checks every learner page in the end-to-end tests; committed so that the tests need no
// network and no npm at test time.
const axeDir = `${here}../practice/tests/e2e/vendor/`;
mkdirSync(axeDir, { recursive: true });
copyFileSync(`${here}node_modules/axe-core/axe.min.js`, `${axeDir}axe.min.js`);
writeFileSync(`${axeDir}axe.LICENSE.txt`, licence("axe-core"));

console.log(`bundled ${packages.size} packages into static/vendor/codemirror.js; copied htmx.min.js`);
