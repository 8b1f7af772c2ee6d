// Plans list: "Compare selected" opens the compare page with one shareable parameter, plans=1,2,3.
// Without this script the form sends repeated plans=1&plans=2, which the compare page also reads.
(function () {
  "use strict";
  var form = document.getElementById("compare-form");
  if (!form) { return; }
  form.addEventListener("submit", function (event) {
    var ids = Array.prototype.map.call(
      form.querySelectorAll('input[name="plans"]:checked'),
      function (box) { return box.value; }
    );
    event.preventDefault();
    window.location.assign(form.action + "?plans=" + encodeURIComponent(ids.join(",")).replace(/%2C/g, ","));
  });
})();
