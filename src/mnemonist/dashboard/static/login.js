// The login form: sends the token once; the daemon answers with an HttpOnly cookie.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("login");
  const problem = form.querySelector(".error");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const response = await fetch("/login", {
      method: "POST", credentials: "same-origin",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token: form.elements.token.value }),
    });
    if (response.ok) {
      location.assign("/");
      return;
    }
    let message = `HTTP ${response.status}`;
    try { message = (await response.json()).message || message; } catch (_) { /* not JSON */ }
    problem.textContent = message;
  });
});
