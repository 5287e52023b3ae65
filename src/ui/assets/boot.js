// ovmem ui: what a reload gets. The token is not in the address (the page takes it out) and
// never in a cookie (a browser sends cookies to every port of 127.0.0.1), so the page keeps it
// in this tab's sessionStorage, which no other port can read; here it asks again with it. An
// address that already carries a token that failed is not retried.
"use strict";

const KEY = "ovmem-token";
const kept = sessionStorage.getItem(KEY);
if (kept && !new URLSearchParams(location.search).has("token")) {
  location.replace("/?token=" + encodeURIComponent(kept) + location.hash);
} else {
  sessionStorage.removeItem(KEY);
  document.getElementById("why").hidden = false;
}
