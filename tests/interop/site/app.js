// What the page does once loaded: a JSON POST, a GET with a query, a form POST, and an image
// from another origin (localhost is not 127.0.0.1) that the replay leaves out. Then the
// title says it is done.
(async () => {
  await fetch("/api/save", {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Pelt-Test": "har" },
    body: JSON.stringify({ item: 42, note: "from the page" }),
  });
  await fetch("/api/items?page=2&sort=new");
  await fetch("/api/form", { method: "POST", body: new URLSearchParams({ q: "a b", n: "1" }) });
  await new Promise(done => {
    const img = new Image();
    img.onload = img.onerror = done;
    img.src = `http://localhost:${location.port}/pixel.svg`;
  });
  document.getElementById("status").textContent = "done";
  document.title = "done";
})();
