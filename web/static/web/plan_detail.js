// Plan detail: while the latest run is queued or running, ask the API for its status every second and
// reload the page once it has finished (the page then shows the new result or the run's error).
(function () {
  "use strict";
  var box = document.getElementById("run-status");
  var url = box && box.getAttribute("data-run-url");
  if (!url) { return; }
  var text = box.querySelector("[data-run-state]");
  var failures = 0;
  function poll() {
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.json();
      })
      .then(function (run) {
        failures = 0;
        if (run.status === "succeeded" || run.status === "failed") {
          window.location.reload();
          return;
        }
        if (text && text.textContent !== run.status) { text.textContent = run.status; }
        window.setTimeout(poll, 1000);
      })
      .catch(function () {
        failures += 1;
        if (failures < 10) { window.setTimeout(poll, 2000); }
        else if (text) { text.textContent = "unknown (reload the page to check again)"; }
      });
  }
  window.setTimeout(poll, 1000);
})();
