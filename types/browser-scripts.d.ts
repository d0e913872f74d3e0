// What the type check needs to know beyond the DOM: the two names the shared page scripts
// use to export themselves to Node's test runner (a browser has neither, hence the typeof guard).
declare var module: { exports: unknown } | undefined;
declare function require(id: string): any;
// contracts.js is a plain script in the page and a CommonJS module to TypeScript: its global.
declare const LeaflabContracts: typeof import("../services/api/web/static/contracts.js");
