// Progressive enhancements shared by every page; each page works without them.
(function () {
  "use strict";
  // A <select data-autosubmit> submits its form when changed (the team switcher); its button stays for
  // keyboard and no-script use.
  document.querySelectorAll("select[data-autosubmit]").forEach(function (select) {
    select.addEventListener("change", function () { select.form.requestSubmit(); });
  });
  // <button data-confirm="..."> asks before submitting (revoke, archive).
  document.querySelectorAll("[data-confirm]").forEach(function (button) {
    button.addEventListener("click", function (event) {
      if (!window.confirm(button.getAttribute("data-confirm"))) { event.preventDefault(); }
    });
  });
})();
