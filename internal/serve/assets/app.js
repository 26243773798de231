// sfgen serve: the page works without this script (its forms are GET
// forms that the server renders). With it, the result follows the form as
// you type: the script fetches the same page for the form's values and
// swaps in the parts marked data-swap, so that the page and the server
// never disagree, and it makes the Copy button work.
(function () {
  "use strict";
  var latest = 0;
  var timer = 0;

  function bindCopy() {
    var button = document.getElementById("copy");
    if (!button) {
      return;
    }
    button.hidden = false;
    button.addEventListener("click", function () {
      var text = button.getAttribute("data-copy");
      var done = function () {
        button.textContent = "Copied";
        setTimeout(function () { button.textContent = "Copy"; }, 1500);
      };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(done, function () { selectID(); });
      } else {
        selectID();
        try {
          if (document.execCommand("copy")) {
            done();
          }
        } catch (e) {
          // The ID stays selected, for the reader to copy.
        }
      }
    });
  }

  function selectID() {
    var out = document.getElementById("id-value");
    var range = document.createRange();
    range.selectNodeContents(out);
    var sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
  }

  function update(form) {
    var params = new URLSearchParams(new FormData(form));
    var url = "/?" + params.toString();
    var mine = ++latest;
    fetch(url, { headers: { Accept: "text/html" }, credentials: "same-origin" })
      .then(function (res) { return res.text(); })
      .then(function (html) {
        if (mine !== latest) {
          return; // a later keystroke's answer wins
        }
        var doc = new DOMParser().parseFromString(html, "text/html");
        document.querySelectorAll("[data-swap]").forEach(function (el) {
          var fresh = doc.getElementById(el.id);
          if (fresh) {
            el.replaceWith(document.importNode(fresh, true));
          }
        });
        document.querySelectorAll("form[data-live] input").forEach(function (input) {
          var fresh = doc.getElementById(input.id);
          if (!fresh) {
            return;
          }
          if (fresh.hasAttribute("aria-invalid")) {
            input.setAttribute("aria-invalid", "true");
          } else {
            input.removeAttribute("aria-invalid");
          }
          // The other form shows the same ID: its values follow.
          if (input.form !== form && fresh.getAttribute("aria-invalid") !== "true" && doc.querySelector("#result #id-value")) {
            input.value = fresh.value;
          }
        });
        document.title = doc.title;
        history.replaceState(null, "", url);
        bindCopy();
      })
      .catch(function () {
        // Offline or stopped: the form still submits.
      });
  }

  document.querySelectorAll("form[data-live]").forEach(function (form) {
    form.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () { update(form); }, 120);
    });
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      clearTimeout(timer);
      update(form);
    });
  });
  bindCopy();
})();
