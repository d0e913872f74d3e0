// What the job page knows from a job's event stream, folded from one event at a time. Pure (no
// DOM, no network) so Node's test runner checks it: job.js renders the view it returns.
"use strict";
/**
 * @typedef {{status: string, progress: object | null, terminal: boolean, final: boolean, lost: number}} JobView
 */
const JobEventFold = (() => {
  /** @type {typeof LeaflabContracts} */
  const C = typeof LeaflabContracts !== "undefined" ? LeaflabContracts : require("./contracts.js");

  // The events the page follows (its log shows these); each must be one of the contract's types.
  /** @type {readonly (keyof JobEventData)[]} */
  const FOLLOWED = Object.freeze(["status", "token", "tool_start", "tool_end", "todo", "compression", "approval", "budget", "progress", "events_lost", "memory_proposal", "access_revoked", "final"]);

  /** @param {unknown} status */
  function isTerminal(status) {
    return typeof status === "string" && C.TERMINAL_STATUSES.includes(status);
  }

  /** @param {string} status the job's status as read from the API @returns {JobView} */
  function initial(status) {
    return { status, progress: null, terminal: isTerminal(status), final: false, lost: 0 };
  }

  /**
   * The view after one event; the same object when the event changes nothing.
   * @param {JobView} view @param {string} type @param {any} data @returns {JobView}
   */
  function fold(view, type, data) {
    switch (type) {
      case "status": {
        const d = /** @type {JobEventData["status"]} */ (data);
        const status = d.status || view.status;
        // A batch's running status carries its task counts: they are its progress.
        const progress = d.progress || view.progress;
        return { ...view, status, progress, terminal: isTerminal(status) };
      }
      case "progress":
        return { ...view, progress: data };
      case "events_lost":
        return { ...view, lost: view.lost + 1 };
      case "final": {
        const status = /** @type {JobEventData["final"]} */ (data).status || view.status;
        return { ...view, status, terminal: true, final: true };
      }
      default:
        return view;
    }
  }

  return Object.freeze({ FOLLOWED, isTerminal, initial, fold });
})();
if (typeof module !== "undefined") module.exports = JobEventFold;
