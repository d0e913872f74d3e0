// What the type check needs to know beyond the DOM and the page scripts themselves.
//
// Every page script is a classic script: its top-level names share one global scope, which is
// how the templates hand them on (leaflab.js's Leaflab, chat_render.js's ChatRender, …). The
// scripts are all in jsconfig.json's "files", so TypeScript sees those names directly; only
// the two files that also export themselves to Node's tests (contracts.js, job_events.js) are
// CommonJS modules to TypeScript, and their globals are declared below from their exports.

// The two names the shared page scripts use to export themselves to Node's test runner (a
// browser has neither, hence the typeof guard).
declare var module: { exports: unknown } | undefined;
declare function require(id: string): any;
// contracts.js is a plain script in the page and a CommonJS module to TypeScript: its global.
declare const LeaflabContracts: typeof import("../services/api/web/static/contracts.js");
// job_events.js likewise (job.html loads it before job.js).
declare const JobEventFold: typeof import("../services/api/web/static/job_events.js");

// The vendored libraries in static/vendor/ (markdown-it, DOMPurify, KaTeX, highlight.js,
// Chart.js) ship minified without type declarations, and pulling their @types packages in
// for five call sites is not worth it: they are `any`. Each may be missing at run time (a
// script failed to load), which the pages test with `typeof X === "undefined"` or `window.X`.
declare const markdownit: any;
declare const DOMPurify: any;
declare const katex: any;
declare const hljs: any;
declare const Chart: any;
interface Window { Chart?: any }

// markdown-it's objects as its plugins (markdown_math.js, markdown_citations.js) see them:
// untyped for the same reason.
type MarkdownIt = any;
type MarkdownItState = any;
type MarkdownItToken = any;

// What Leaflab.api throws for a non-2xx answer: the status and the parsed body ride along.
interface LeaflabApiError extends Error { status: number; data: any }

// JSON from Leaflab's API (Leaflab.api's answer). The routes' shapes live in Python
// (services/api/...); the pages read fields off them untyped.
type ApiJson = any;
// The generated contract's types, for the page scripts' JSDoc.
type JobEventData = import("../services/api/web/static/contracts.js").JobEventData;
type JobStatusName = import("../services/api/web/static/contracts.js").JobStatusName;
type DocumentEventData = import("../services/api/web/static/contracts.js").DocumentEventData;
