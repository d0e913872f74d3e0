// ESLint (flat config) for the browser code: the recommended rules, browser globals, and the
// globals the pages' plain scripts define for each other (loaded in order by the templates).
"use strict";
const js = require("@eslint/js");
const globals = require("globals");

const pageGlobals = Object.fromEntries(
  ["Leaflab", "LeaflabContracts", "LeaflabMarkdown", "JobEventFold", "Waterfall", "ChatRender", "ChatCommands",
    "Chart", "markdownit", "DOMPurify", "katex", "hljs", "LeaflabMarkdownMath", "LeaflabMarkdownCitations"].map((n) => [n, "readonly"]),
);

module.exports = [
  { ignores: ["services/api/web/static/vendor/**", "node_modules/**"] },
  js.configs.recommended,
  {
    files: ["services/api/web/static/**/*.js"],
    languageOptions: {
      sourceType: "script",
      ecmaVersion: 2022,
      // module/require: the two shared modules export themselves to Node's tests.
      globals: { ...globals.browser, ...pageGlobals, module: "readonly", require: "readonly" },
    },
    rules: {
      // A page script's top-level const is its export to the next script (a global): only
      // local names must be used. `_` marks a deliberately unused catch binding or argument.
      "no-unused-vars": ["error", { vars: "local", argsIgnorePattern: "^_", caughtErrorsIgnorePattern: "^_" }],
      // Each script defines the global the config lists for the scripts that read it.
      "no-redeclare": ["error", { builtinGlobals: false }],
      // Best-effort calls whose failure the page ignores on purpose.
      "no-empty": ["error", { allowEmptyCatch: true }],
    },
  },
  {
    files: ["tests/web/js/**/*.js", "eslint.config.js"],
    languageOptions: { sourceType: "commonjs", ecmaVersion: 2022, globals: globals.node },
  },
];
