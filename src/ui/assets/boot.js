// ovmem ui: what a reload gets. The token is never in an address (a browser's history keeps
// every address it opened) nor in a cookie (a browser sends cookies to every port of 127.0.0.1):
// the page keeps it in this tab's sessionStorage, which no other port can read, and here posts it
// back to the page. It is taken out of the tab first: a token that fails (the viewer was started
// again) comes back to this page with none, which then says what to do.
"use strict";

const KEY = "ovmem-token";
const kept = sessionStorage.getItem(KEY);
sessionStorage.removeItem(KEY);
if (kept) {
  const form = document.createElement("form");
  form.method = "post";
  form.action = "/" + location.hash;
  const field = document.createElement("input");
  field.type = "hidden";
  field.name = "token";
  field.value = kept;
  form.append(field);
  document.body.append(form);
  // Before the page has loaded, so the browser replaces this entry of the tab's history.
  form.submit();
} else {
  document.getElementById("why").hidden = false;
}
