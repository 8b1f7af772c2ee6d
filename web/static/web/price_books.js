// A price book's page while its fan-out re-runs plans: reload every 2 s until none is pending.
(function () {
  "use strict";
  var status = document.getElementById("fan-out-status");
  if (status && Number(status.getAttribute("data-pending")) > 0) {
    window.setTimeout(function () { window.location.reload(); }, 2000);
  }
})();
