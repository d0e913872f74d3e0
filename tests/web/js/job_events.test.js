// The job page's event fold (static/job_events.js), run by Node's test runner against the
// generated contracts (static/contracts.js): what the page shows after each event.
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const C = require("../../../services/api/web/static/contracts.js");
const Fold = require("../../../services/api/web/static/job_events.js");

test("a job's three terminal statuses end it, and nothing else does", () => {
  assert.deepEqual([...C.TERMINAL_STATUSES].sort(), ["cancelled", "failed", "succeeded"]);
  for (const status of C.TERMINAL_STATUSES) assert.equal(Fold.isTerminal(status), true, status);
  for (const status of C.ACTIVE_STATUSES) assert.equal(Fold.isTerminal(status), false, status);
  assert.deepEqual([...C.ACTIVE_STATUSES, ...C.TERMINAL_STATUSES].sort(), [...C.JOB_STATUSES].sort());
});

test("every event the page follows is one the workers publish", () => {
  for (const type of Fold.FOLLOWED) assert.ok(C.EVENT_TYPES.includes(type), `${type} is not in contracts.js`);
});

test("a status event moves the job on; a terminal one hides cancel", () => {
  let view = Fold.initial("queued");
  assert.equal(view.terminal, false);
  view = Fold.fold(view, "status", { status: "running" });
  assert.deepEqual([view.status, view.terminal], ["running", false]);
  view = Fold.fold(view, "status", { status: "budget_exhausted", error: "spent" });
  assert.deepEqual([view.status, view.terminal], ["budget_exhausted", false]);
  view = Fold.fold(view, "status", { status: "cancelled" });
  assert.deepEqual([view.status, view.terminal, view.final], ["cancelled", true, false]);
});

test("a status event without a status keeps the one before", () => {
  const view = Fold.fold(Fold.initial("running"), "status", { message: "still here" });
  assert.equal(view.status, "running");
});

test("survey progress and a batch's task counts are the progress shown", () => {
  let view = Fold.fold(Fold.initial("running"), "progress", { stage: "read", papers_found: 4, papers_read: 1 });
  assert.deepEqual(view.progress, { stage: "read", papers_found: 4, papers_read: 1 });
  const before = view;
  view = Fold.fold(view, "status", { status: "running" });
  assert.equal(view.progress, before.progress, "a status without counts keeps the progress");
  view = Fold.fold(view, "status", { status: "running", progress: { done: 2, total: 5 } });
  assert.deepEqual(view.progress, { done: 2, total: 5 });
});

test("final ends the view whatever came before; lost events are counted", () => {
  let view = Fold.fold(Fold.initial("running"), "events_lost", { last_event_id: "1-0", message: "lost" });
  assert.equal(view.lost, 1);
  view = Fold.fold(view, "final", { status: "failed", error: "boom" });
  assert.deepEqual([view.status, view.terminal, view.final], ["failed", true, true]);
});

test("events the fold does not read leave the view as it was", () => {
  const view = Fold.initial("running");
  for (const type of ["token", "tool_start", "todo", "model", "sandbox_start"]) {
    assert.equal(Fold.fold(view, type, {}), view, type);
  }
});
