// Opens the built book in a real (headless) Chromium and fails on anything a reader would hit:
// a JavaScript error, a console error, a failed or off-machine request, a page without its title,
// an image that does not load, a chapter the search cannot find, a print page that does not render.
//
//   node check-book.cjs --build DIR --summary SUMMARY.md --chromium PATH --out DIR [--site-path /x/]
//
// Run by scripts/browser-test, which installs playwright-core (no browser download: it drives
// Debian's chromium). The book is served from this process on 127.0.0.1, on a free port, under the
// same path as the published site, so nothing is left running afterwards.
"use strict";

const fs = require("fs");
const http = require("http");
const path = require("path");

function parseArgs(argv) {
  const options = { sitePath: "/" };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    const key = { "--build": "build", "--summary": "summary", "--chromium": "chromium", "--out": "out",
                  "--site-path": "sitePath", "--modules": "modules" }[flag];
    if (!key || value === undefined) throw new Error(`unknown or incomplete option ${flag}`);
    options[key] = value;
  }
  for (const key of ["build", "summary", "chromium", "out", "modules"]) {
    if (!options[key]) throw new Error(`--${key} is required`);
  }
  options.sitePath = "/" + options.sitePath.replace(/^\/+|\/+$/g, "") + "/";
  options.sitePath = options.sitePath.replace(/^\/\/$/, "/");
  return options;
}

// Titles compared as a reader sees them: smart punctuation turns ' and " into curly quotes.
const plain = (text) => text.replace(/[\u2018\u2019]/g, "'").replace(/[\u201c\u201d]/g, '"')
  .replace(/[*_`]/g, "").replace(/\s+/g, " ").trim();

// Chapters in reading order, from SUMMARY.md: [{title, file}] (drafts without a file are skipped).
function chaptersFrom(summaryPath) {
  const chapters = [];
  const link = /\[([^\]]+)\]\(([^)\s]+\.md)\)/g;
  for (const line of fs.readFileSync(summaryPath, "utf8").split("\n")) {
    for (const match of line.matchAll(link)) {
      chapters.push({ title: match[1], file: match[2].replace(/\.md$/, ".html") });
    }
  }
  return chapters;
}

const TYPES = { ".html": "text/html; charset=utf-8", ".js": "text/javascript", ".css": "text/css",
                ".svg": "image/svg+xml", ".png": "image/png", ".woff2": "font/woff2", ".woff": "font/woff",
                ".ttf": "font/ttf", ".json": "application/json", ".pdf": "application/pdf", ".txt": "text/plain" };

// A static server like the published site: the book under sitePath, 404.html for anything missing.
function serve(root, sitePath) {
  const server = http.createServer((request, response) => {
    const url = new URL(request.url, "http://127.0.0.1");
    let file = null;
    if (url.pathname.startsWith(sitePath)) {
      const relative = decodeURIComponent(url.pathname.slice(sitePath.length)) || "index.html";
      const candidate = path.resolve(root, relative.endsWith("/") ? relative + "index.html" : relative);
      if (candidate.startsWith(path.resolve(root) + path.sep) && fs.existsSync(candidate) &&
          fs.statSync(candidate).isFile()) file = candidate;
    }
    if (file === null) {
      response.writeHead(404, { "Content-Type": TYPES[".html"] });
      response.end(fs.readFileSync(path.join(root, "404.html")));
      return;
    }
    response.writeHead(200, { "Content-Type": TYPES[path.extname(file)] || "application/octet-stream" });
    fs.createReadStream(file).pipe(response);
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

// The flags keep Chromium off the network: this machine's network is closed, and a book needs none.
const CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
  "--disable-default-apps", "--disable-extensions"];

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const { chromium } = require(path.join(options.modules, "playwright-core"));
  const chapters = chaptersFrom(options.summary);
  if (chapters.length === 0) throw new Error(`no chapters found in ${options.summary}`);
  fs.mkdirSync(options.out, { recursive: true });

  const server = await serve(options.build, options.sitePath);
  const base = `http://127.0.0.1:${server.address().port}${options.sitePath}`;
  const browser = await chromium.launch({ executablePath: options.chromium, args: CHROMIUM_ARGS, headless: true });
  const problems = [];
  let checks = 0;
  const pass = () => { checks += 1; };

  // One page object per visit, with every kind of failure recorded against the page it happened on.
  async function open(context, file, prepare) {
    const page = await context.newPage();
    const where = file;
    page.on("pageerror", (error) => problems.push(`${where}: JavaScript error: ${error.message}`));
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(`${where}: console error: ${message.text()}`);
    });
    page.on("requestfailed", (request) =>
      problems.push(`${where}: request failed: ${request.url()} (${request.failure()?.errorText})`));
    page.on("response", (response) => {
      if (response.status() >= 400) problems.push(`${where}: HTTP ${response.status()} for ${response.url()}`);
    });
    if (prepare) await prepare(page);
    const response = await page.goto(base + file, { waitUntil: "load" });
    if (!response || response.status() !== 200) problems.push(`${where}: HTTP ${response && response.status()}`);
    await page.waitForLoadState("networkidle");
    return page;
  }

  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    // Anything that leaves 127.0.0.1 is a bug in the book (a CDN font, the Rust playground...).
    await context.route("**/*", (route) => {
      const url = new URL(route.request().url());
      if (url.hostname === "127.0.0.1" || url.protocol === "data:") return route.continue();
      problems.push(`request off this machine: ${url.href}`);
      return route.abort();
    });

    for (const [index, chapter] of chapters.entries()) {
      const page = await open(context, chapter.file);
      const title = await page.title();
      if (plain(title).startsWith(plain(chapter.title))) pass(); else problems.push(`${chapter.file}: <title> is "${title}", expected it to start with "${chapter.title}"`);
      const heading = await page.locator("main h1").first();
      if (await heading.count() && await heading.isVisible() && (await heading.innerText()).trim()) pass();
      else problems.push(`${chapter.file}: no visible <h1> in the content`);
      const images = await page.$$eval("main img", (all) => all.map((img) =>
        ({ src: img.getAttribute("src"), ok: img.complete && img.naturalWidth > 0, alt: img.alt })));
      for (const image of images) {
        if (image.ok) pass(); else problems.push(`${chapter.file}: image did not load: ${image.src}`);
        if (!image.alt) problems.push(`${chapter.file}: image without alt text: ${image.src}`);
      }
      const name = `${String(index + 1).padStart(2, "0")}-${chapter.file.replace(/\.html$/, "").replace(/\W+/g, "-")}.png`;
      await page.screenshot({ path: path.join(options.out, name), fullPage: true });
      console.log(`  ${chapter.file}: "${title}", ${images.length} image(s) -> ${name}`);
      await page.close();
    }

    // Search: for every chapter, its own title must find it (the index is built in the page).
    const searchPage = await open(context, chapters[0].file);
    for (const chapter of chapters) {
      const bar = searchPage.locator("#mdbook-searchbar");
      if (!(await bar.isVisible())) await searchPage.click("#mdbook-search-toggle");
      await bar.fill(chapter.title);
      await bar.press("End"); // mdBook searches on keyup, which fill() does not send
      const hit = searchPage.locator(`#mdbook-searchresults a[href^="${chapter.file}"]`);
      try {
        await hit.first().waitFor({ state: "attached", timeout: 5000 });
        pass();
        console.log(`  search "${chapter.title}": finds ${chapter.file}`);
      } catch {
        const found = await searchPage.$$eval("#mdbook-searchresults a", (all) => all.map((a) => a.getAttribute("href")));
        problems.push(`search for "${chapter.title}" did not find ${chapter.file} (found: ${found.join(", ") || "nothing"})`);
      }
    }
    await searchPage.screenshot({ path: path.join(options.out, "search.png") });
    await searchPage.close();

    // The print page: every chapter on one page. It calls window.print() on load; record that
    // instead of opening a dialog.
    const printPage = await open(context, "print.html", (page) =>
      page.addInitScript(() => { window.print = () => { window.__printRequested = true; }; }));
    await printPage.waitForFunction(() => window.__printRequested === true, null, { timeout: 10000 })
      .then(pass, () => problems.push("print.html: never asked to print"));
    const headings = await printPage.$$eval("main h1", (all) => all.map((h) => h.textContent.trim()));
    for (const chapter of chapters) {
      if (headings.some((h) => plain(h).startsWith(plain(chapter.title)) || plain(chapter.title).startsWith(plain(h)))) pass();
      else problems.push(`print.html: no heading for "${chapter.title}" (headings: ${headings.join(" | ")})`);
    }
    const printImages = await printPage.$$eval("main img", (all) => all.filter((i) => !(i.complete && i.naturalWidth > 0)).map((i) => i.src));
    for (const src of printImages) problems.push(`print.html: image did not load: ${src}`);
    await printPage.emulateMedia({ media: "print" });
    await printPage.screenshot({ path: path.join(options.out, "print.png") });
    console.log(`  print.html: ${headings.length} chapter headings, print requested`);
    await printPage.close();

    // The 404 page, as the published site serves it for a wrong address.
    const missing = await context.newPage();
    const response = await missing.goto(base + "no-such-page.html");
    if (response.status() === 404 && (await missing.locator("main h1").count())) pass();
    else problems.push(`404 page: HTTP ${response.status()}, no heading`);
    await missing.close();
  } finally {
    await browser.close();
    server.close();
  }

  const unique = [...new Set(problems)]; // mdBook 0.5 shows each image twice (click-to-zoom)
  for (const problem of unique) console.log(`PROBLEM ${problem}`);
  console.log(`browser check: ${chapters.length} chapters, ${checks} checks passed, ${unique.length} problems; screenshots in ${options.out}`);
  process.exitCode = problems.length ? 1 : 0;
}

main().catch((error) => { console.error(`browser check: ${error.stack || error}`); process.exitCode = 2; });
