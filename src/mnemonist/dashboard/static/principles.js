// The graph page's principle actions: confirm or reject a proposed principle. Sent to the JSON
// API with dashboard.js's api() (loaded first, on every page), like every other action of the
// dashboard; the page reloads to show the result.
"use strict";

function principleActions() {
  for (const form of document.querySelectorAll("form.principle-review")) {
    const buttons = form.querySelectorAll("button[data-action]");
    form.addEventListener("submit", (event) => event.preventDefault());  // Enter decides nothing
    for (const button of buttons) {
      button.addEventListener("click", async () => {
        const action = button.dataset.action === "reject" ? "reject" : "confirm";
        const why = form.elements.reason.value.trim();
        const id = encodeURIComponent(form.dataset.id);
        for (const b of buttons) b.disabled = true;
        try {
          await api("POST", `/api/principles/${id}/${action}`,
                    { reason: why || `${action}ed in the dashboard` });
          say(form, "Done.");
          location.reload();
        } catch (err) {
          say(form, err.message, true);
          for (const b of buttons) b.disabled = false;
        }
      });
    }
  }
}

document.addEventListener("DOMContentLoaded", principleActions);
