// The review page's actions: decide a pair (keep A, keep B, dismiss) and undo what
// consolidation settled. Sent to the JSON API with dashboard.js's api() (loaded first, on
// every page), like every other action of the dashboard; the page reloads to show the result.
"use strict";

function reviewActions() {
  for (const form of document.querySelectorAll("form.review-decide")) {
    const buttons = form.querySelectorAll("button[data-action]");
    form.addEventListener("submit", (event) => event.preventDefault());  // Enter decides nothing
    for (const button of buttons) {
      button.addEventListener("click", async () => {
        const action = button.dataset.action;
        const why = form.elements.reason.value.trim();
        const pair = encodeURIComponent(form.dataset.id);
        for (const b of buttons) b.disabled = true;
        try {
          if (action === "dismiss") {
            await api("POST", `/api/repair/duplicates/${pair}/dismiss`,
                      { reason: why || "dismissed in the dashboard" });
          } else {
            if (!why) throw new Error("say why: a reason is required to keep one side");
            await api("POST", `/api/repair/duplicates/${pair}/resolve`,
                      { keep: action === "keep_a" ? "a" : "b", reason: why, changed_by: BY });
          }
          say(form, "Done.");
          location.reload();
        } catch (err) {
          say(form, err.message, true);
          for (const b of buttons) b.disabled = false;
        }
      });
    }
  }
  for (const form of document.querySelectorAll("form.review-undo")) {
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const button = form.querySelector("button[type=submit]");
      const why = form.elements.reason.value.trim();
      button.disabled = true;
      try {
        if (!why) throw new Error("say why it comes back: a reason is required");
        await api("POST", `/api/memory/${encodeURIComponent(form.dataset.id)}/restore`,
                  { reason: why, changed_by: BY });
        say(form, "Restored.");
        location.reload();
      } catch (err) {
        say(form, err.message, true);
        button.disabled = false;
      }
    });
  }
}

document.addEventListener("DOMContentLoaded", reviewActions);
