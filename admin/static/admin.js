// Progressive enhancements of the admin UI. Every form works without this file.
"use strict";

(function () {
  const UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];

  function humanBytes(bytes) {
    let value = bytes;
    let unit = 0;
    while (value >= 1024 && unit < UNITS.length - 1) {
      value /= 1024;
      unit++;
    }
    return unit === 0 ? bytes + " B" : value.toFixed(value >= 100 ? 0 : 1) + " " + UNITS[unit];
  }

  // --- Release upload with a real progress bar (XMLHttpRequest upload events) ---

  function enhanceUpload(form) {
    const box = form.querySelector("[data-upload-progress]");
    const bar = box.querySelector("progress");
    const status = form.querySelector("[data-upload-status]");
    const submit = form.querySelector("[data-upload-submit]");
    const cancel = form.querySelector("[data-upload-cancel]");
    const card = form.closest("section") || form.parentNode;
    let xhr = null;

    function setState(state) {
      form.dataset.uploadState = state;
      box.dataset.state = state;
      submit.disabled = state === "uploading";
      cancel.hidden = state !== "uploading";
    }

    function setProgress(loaded, total) {
      const percent = total > 0 ? Math.floor((loaded / total) * 100) : 0;
      bar.max = total > 0 ? total : 1;
      bar.value = total > 0 ? loaded : 0;
      status.dataset.percent = String(percent);
      status.textContent = percent + "% · " + humanBytes(loaded) + " of " + humanBytes(total);
    }

    // The error replaces the progress text too, so nothing still reads "saving…".
    function showError(message, invalid) {
      clearError();
      const error = document.createElement("div");
      error.className = "flash flash-error";
      error.setAttribute("role", "alert");
      error.dataset.formError = "";
      error.dataset.uploadError = "";
      error.textContent = message;
      card.insertBefore(error, form);
      delete status.dataset.percent;
      status.textContent = "Upload failed: " + message;
      (invalid || []).forEach(markInvalid);
      const first = form.querySelector("[aria-invalid=true]");
      if (first && first.focus) first.focus();
    }

    // Outline a field the server refused, with its message under it, as the re-shown form does.
    function markInvalid(serverField) {
      const field = serverField.id ? form.querySelector("#" + CSS.escape(serverField.id)) : null;
      if (!field) return;
      field.setAttribute("aria-invalid", "true");
      const message = serverField.ownerDocument.getElementById(serverField.id + "-error");
      if (!message) return;
      const copy = document.importNode(message, true);
      copy.dataset.uploadFieldError = "";
      field.setAttribute("aria-describedby", copy.id);
      field.closest(".field").appendChild(copy);
    }

    function clearError() {
      card.querySelectorAll("[data-form-error]").forEach((node) => node.remove());
      form.querySelectorAll("[data-upload-field-error]").forEach((node) => node.remove());
      form.querySelectorAll("[aria-invalid=true]").forEach((node) => {
        node.removeAttribute("aria-invalid");
        const hint = document.getElementById(node.id + "-hint");
        if (hint) node.setAttribute("aria-describedby", hint.id);
        else node.removeAttribute("aria-describedby");
      });
    }

    function swapReleaseLists(doc) {
      ["releases", "latest-releases"].forEach(function (id) {
        const fresh = doc.getElementById(id);
        const current = document.getElementById(id);
        if (fresh && current) current.replaceWith(document.importNode(fresh, true));
      });
    }

    function finish(request) {
      const doc = new DOMParser().parseFromString(request.responseText, "text/html");
      const landed = request.responseURL ? new URL(request.responseURL).pathname : "";
      if (landed === "/admin/login") {
        setState("error");
        showError("Your session has ended. Sign in again in another tab, then upload again.");
        return;
      }
      if (request.status >= 200 && request.status < 300) {
        // The answer is the project's overview: its list of releases replaces this page's; the
        // Releases page, whose whole table the overview does not have, reads itself again.
        swapReleaseLists(doc);
        if (document.getElementById("releases") && !doc.getElementById("releases")) {
          fetch(location.href, { credentials: "same-origin" })
            .then((answer) => answer.text())
            .then((text) => swapReleaseLists(new DOMParser().parseFromString(text, "text/html")))
            .catch(() => {});
        }
        const flash = doc.getElementById("flash");
        const currentFlash = document.getElementById("flash");
        if (flash && currentFlash) currentFlash.replaceWith(document.importNode(flash, true));
        const message = flash ? flash.textContent.trim() : "";
        form.reset();
        bar.max = 1;
        bar.value = 1;
        status.dataset.percent = "100";
        status.textContent = "100% · Upload complete. " + message;
        setState("done");
        return;
      }
      const error = doc.querySelector("#upload [data-form-error]") ||
        doc.querySelector("[data-form-error]");
      const uploadForm = doc.querySelector("form[data-upload]");
      setState("error");
      showError(
        error ? error.textContent.trim() : "The upload failed (HTTP " + request.status + ").",
        uploadForm ? Array.from(uploadForm.querySelectorAll("[aria-invalid=true]")) : [],
      );
    }

    form.addEventListener("submit", function (event) {
      if (!globalThis.FormData || !globalThis.XMLHttpRequest || !globalThis.DOMParser) return;
      event.preventDefault();
      if (xhr) return;
      clearError();
      const input = form.elements.namedItem("file");
      const file = input && input.files ? input.files[0] : undefined;
      const max = Number(form.dataset.maxBytes || 0);
      if (file && max && file.size > max) {
        setState("error");
        showError(
          "The file is " + humanBytes(file.size) + ", larger than the upload limit of " +
            humanBytes(max) + ".",
        );
        return;
      }
      const data = new FormData(form);
      xhr = new XMLHttpRequest();
      xhr.open("POST", form.action);
      xhr.upload.addEventListener("progress", function (e) {
        if (e.lengthComputable) setProgress(e.loaded, e.total);
      });
      xhr.upload.addEventListener("load", function () {
        if (form.dataset.uploadState === "uploading") {
          status.textContent = "100% · Sent. Checking and saving the release…";
        }
      });
      xhr.addEventListener("load", function () {
        const request = xhr;
        xhr = null;
        finish(request);
      });
      xhr.addEventListener("error", function () {
        xhr = null;
        setState("error");
        showError("The upload failed: the connection was lost. Please try again.");
      });
      xhr.addEventListener("abort", function () {
        xhr = null;
        setState("cancelled");
        status.textContent = "Upload cancelled.";
      });
      box.hidden = false;
      setState("uploading");
      setProgress(0, file ? file.size : 0);
      xhr.send(data);
    });

    cancel.addEventListener("click", function () {
      if (xhr) xhr.abort();
    });
  }

  // --- Copy buttons on the new-key page ---
  // The key is in the page once, in the data-api-key attribute; it is read from
  // there at click time and never written into the DOM (no hidden input, no
  // filled-in command text).

  function keyFrom(selector) {
    const holder = selector ? document.querySelector(selector) : null;
    return holder ? holder.dataset.apiKey || "" : "";
  }

  // Last resort without the Clipboard API: a copy command whose data is set in
  // the copy event, so no element has to hold the text.
  function copyWithEvent(text) {
    let written = false;
    const onCopy = function (event) {
      event.clipboardData.setData("text/plain", text);
      event.preventDefault();
      written = true;
    };
    document.addEventListener("copy", onCopy);
    try {
      document.execCommand("copy");
    } catch (_) {
      written = false;
    } finally {
      document.removeEventListener("copy", onCopy);
    }
    return written;
  }

  function copyToClipboard(button, text) {
    const label = button.textContent;
    const done = function (ok) {
      if (!ok) globalThis.prompt("Copy this text (Ctrl+C / Cmd+C):", text);
      button.textContent = ok ? "Copied" : label;
      setTimeout(function () {
        button.textContent = label;
      }, 2000);
    };
    if (navigator.clipboard && globalThis.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () {
        done(true);
      }, function () {
        done(copyWithEvent(text));
      });
    } else {
      done(copyWithEvent(text));
    }
  }

  function copyKey(button) {
    const key = keyFrom(button.dataset.copyKey);
    if (key) copyToClipboard(button, key);
  }

  // The example command shows a shell variable; the copied command has the key in its place.
  function copyCommand(button) {
    const example = document.querySelector(button.dataset.copyCommand);
    const key = keyFrom(button.dataset.keySource);
    const placeholder = button.dataset.keyPlaceholder;
    if (!example || !key || !placeholder) return;
    copyToClipboard(button, example.textContent.split(placeholder).join(key));
  }

  // --- Scope editor: show the project list or the tags that the chosen mode uses ---

  function enhanceScopeEditor(form) {
    const lists = form.querySelectorAll("[data-scope-for]");
    function update() {
      const checked = form.querySelector('input[name="scope_mode"]:checked');
      const mode = checked ? checked.value : "";
      lists.forEach(function (list) {
        list.hidden = list.dataset.scopeFor.split(" ").indexOf(mode) < 0;
      });
    }
    form.addEventListener("change", function (event) {
      if (event.target.name === "scope_mode") update();
    });
    update();
  }

  // A create form folded above its list opens when a link points at it (#new-project).
  /**
   * The project slugs field of the key form: suggestions for the slug being
   * typed (the last comma-separated entry) from /admin/project-slugs.
   */
  function enhanceSlugSearch(input) {
    const list = document.getElementById(input.getAttribute("list"));
    if (!list) return;
    let timer = 0;
    let asked = "";
    input.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(async () => {
        const entries = input.value.split(",");
        const typed = entries.pop().trim().toLowerCase();
        if (typed === "" || typed === asked) return;
        asked = typed;
        const url = `${input.dataset.slugSearch}?q=${encodeURIComponent(typed)}`;
        const res = await fetch(url, { headers: { accept: "application/json" } });
        if (!res.ok) return;
        const { projects } = await res.json();
        const head = entries.map((entry) => entry.trim()).filter(Boolean);
        list.replaceChildren(...projects.map(({ slug, name }) => {
          const option = document.createElement("option");
          option.value = [...head, slug].join(", ");
          option.label = name;
          return option;
        }));
      }, 150);
    });
  }

  // A datetime-local field read as UTC: say what that is in the browser's time zone.
  function explainUtcField(input) {
    const output = document.getElementById(input.dataset.utcLocal);
    if (!output) return;
    const show = function () {
      const at = input.value ? new Date(input.value + "Z") : null;
      if (!at || Number.isNaN(at.getTime())) {
        output.textContent = "";
        return;
      }
      const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
      output.textContent = "That is " + at.toLocaleString(undefined, {
        dateStyle: "medium",
        timeStyle: "short",
      }) + " your time (" + zone + ").";
    };
    input.addEventListener("input", show);
    input.addEventListener("change", show);
    show();
  }

  // A UTC time shown on the page: say it in the browser's time zone first, UTC beside it.
  function showLocalTime(node) {
    const at = new Date(node.dataset.localTimeOf);
    if (Number.isNaN(at.getTime())) return;
    const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    node.textContent = at.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" }) +
      " your time (" + zone + ") · ";
  }

  function openTargetedDetails() {
    const target = location.hash ? document.getElementById(location.hash.slice(1)) : null;
    if (target && target.tagName === "DETAILS") target.open = true;
  }

  function start() {
    // Controls that only work with this script (the copy buttons) are hidden in the HTML.
    document.querySelectorAll("[data-needs-script]").forEach(function (node) {
      node.hidden = false;
    });
    openTargetedDetails();
    globalThis.addEventListener("hashchange", openTargetedDetails);
    document.querySelectorAll("form[data-upload]").forEach(enhanceUpload);
    document.querySelectorAll("form[data-scope-editor]").forEach(enhanceScopeEditor);
    document.querySelectorAll("input[data-slug-search]").forEach(enhanceSlugSearch);
    document.querySelectorAll("input[data-utc-local]").forEach(explainUtcField);
    document.querySelectorAll("[data-local-time-of]").forEach(showLocalTime);
    // A form sent back with an error: its refused field and the message under it in view (the
    // browser scrolls the autofocused field only just into view, leaving the message below).
    const invalid = document.querySelector("[aria-invalid=true][autofocus]");
    const message = invalid && document.getElementById(invalid.id + "-error");
    if (message) message.scrollIntoView({ block: "center" });
    document.addEventListener("click", function (event) {
      const keyButton = event.target.closest("[data-copy-key]");
      if (keyButton) copyKey(keyButton);
      const commandButton = event.target.closest("[data-copy-command]");
      if (commandButton) copyCommand(commandButton);
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
