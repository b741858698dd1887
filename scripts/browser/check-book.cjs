// Opens the built book in a real (headless) Chromium and fails on anything a reader would hit:
// a JavaScript error, a console error, a failed or off-machine request, a page without its title,
// an image that does not load, a chapter the search cannot find, a print page that does not render.
// It also holds every lesson chapter to the book conventions (CONTRIBUTING.md, "Book conventions"):
// numbered listings, marked anti-patterns, an Exercises section with the lab's checked exercises and
// their solutions, a Summary at the end.
//
//   node check-book.cjs --build DIR --summary SUMMARY.md --chromium PATH --out DIR [--site-path /x/]
//                       [--labs DIR]    (the labs/ folder: its exercises.toml files name the checked
//                                        exercises each chapter must list)
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
                  "--site-path": "sitePath", "--modules": "modules", "--labs": "labs" }[flag];
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

// --- Book conventions (CONTRIBUTING.md, "Book conventions") -------------------------------------

// The part of SUMMARY.md that holds the lessons, and the pages in it that the conventions bind: those
// whose file name starts with "ch". A page nested under another is a sub-page of that chapter: it
// numbers its listings with the chapter's number and needs no Exercises or Summary of its own.
const LESSONS_PART = "The lessons";

function lessonPages(summaryText) {
  const pages = [];
  let part = null;
  let parent = null;
  let sawPart = false;
  for (const line of summaryText.split("\n")) {
    const heading = line.match(/^#\s+(.+?)\s*$/);
    if (heading) {
      part = heading[1];
      if (part === LESSONS_PART) sawPart = true;
      parent = null;
      continue;
    }
    const item = line.match(/^(\s*)[-*]\s+\[[^\]]+\]\(([^)\s]+\.md)\)/);
    if (!item || part !== LESSONS_PART) continue;
    const file = item[2].replace(/\.md$/, ".html");
    const base = path.posix.basename(file);
    const nested = item[1].length > 0;
    const own = base.match(/^ch(\d+)/);
    if (!nested) parent = own ? { number: Number(own[1]), lab: own[1] } : null;
    if (!own) continue;
    const chapter = nested && parent ? parent : { number: Number(own[1]), lab: own[1] };
    pages.push({ file, number: chapter.number, lab: chapter.lab, subPage: nested });
  }
  return { pages, sawPart };
}

// labs/NN-name/exercises.toml -> { "NN": [ids of its [[exercise]] tables, in order] }.
function exerciseIds(labsDir) {
  const ids = {};
  if (!labsDir || !fs.existsSync(labsDir)) return ids;
  for (const name of fs.readdirSync(labsDir).sort()) {
    const lab = name.match(/^(\d+)-/);
    const file = path.join(labsDir, name, "exercises.toml");
    if (!lab || !fs.existsSync(file)) continue;
    const blocks = fs.readFileSync(file, "utf8").split(/^\[\[exercise\]\]\s*$/m).slice(1);
    ids[lab[1]] = blocks.map((block) => (block.match(/^id\s*=\s*"([^"]+)"/m) || [])[1]).filter(Boolean);
  }
  return ids;
}

// Runs in the page: what the conventions look at, as plain data.
function pageFacts() {
  const main = document.querySelector("main");
  const text = (element) => element.textContent.replace(/\s+/g, " ").trim();
  const listings = [...main.querySelectorAll("figure.listing")].map((figure) => {
    const caption = [...figure.children].find((child) => child.tagName === "FIGCAPTION");
    return { id: figure.id, antiPattern: figure.classList.contains("anti-pattern"),
             caption: caption ? text(caption) : null,
             marker: getComputedStyle(figure, "::before").content,
             border: parseFloat(getComputedStyle(figure).borderLeftWidth) || 0 };
  });
  const sections = [...main.querySelectorAll("h2")].map((h2) => {
    const parts = [];
    for (let node = h2.nextElementSibling; node && !/^H[12]$/.test(node.tagName); node = node.nextElementSibling) {
      parts.push(node);
    }
    const solutions = parts.flatMap((node) =>
      [...(node.matches("details.solution") ? [node] : []), ...node.querySelectorAll("details.solution")]);
    return { title: text(h2), text: parts.map(text).join(" "), solutions: solutions.length,
             diffSolutions: solutions.filter((d) => d.querySelector("code.language-diff")).length };
  });
  // Code and output on the page (a prose-only sub-page has none, and so needs no listing).
  const code = main.querySelectorAll("pre").length;
  return { listings, sections, code };
}

const quotes = (value) => value.replace(/[\u2018\u2019]/g, "'").replace(/[\u201c\u201d]/g, '"');

// What a lesson page lacks, as messages naming the page and the element; [] when it follows them.
function conventionProblems(page, facts, ids = {}) {
  const problems = [];
  const say = (message) => problems.push(`${page.file}: book conventions: ${message}`);
  const n = page.number;
  const listings = facts.listings.map((l) => ({ ...l, caption: l.caption === null ? null : quotes(l.caption) }));
  const needsListing = !page.subPage || facts.code === undefined || facts.code > 0 || listings.length > 0;
  if (needsListing && !listings.some((l) => l.caption && l.caption.startsWith(`Listing ${n}-`))) {
    say(`no numbered listing: expected a <figure class="listing"> whose <figcaption> starts with "Listing ${n}-"`);
  }
  let expected = page.subPage ? null : 1;  // a sub-page continues its chapter's numbering
  for (const [index, listing] of listings.entries()) {
    if (listing.caption === null) {
      say(`listing ${index + 1} of the page (id "${listing.id}") has no <figcaption>`);
      continue;
    }
    const found = listing.caption.match(/^Listing (\d+)-(\d+)( \(don't do this\))?:/);
    const shown = listing.caption.length > 60 ? listing.caption.slice(0, 57) + "..." : listing.caption;
    if (!found || Number(found[1]) !== n || (expected !== null && Number(found[2]) !== expected)) {
      const want = expected === null ? `Listing ${n}-M` : `Listing ${n}-${expected}`;
      say(`listing ${index + 1} of the page is captioned "${shown}": expected it to start with "${want}:"`);
      if (!found) continue;
    }
    const number = `${found[1]}-${found[2]}`;
    expected = Number(found[2]) + 1;
    if (listing.id !== `listing-${number}`) say(`Listing ${number} has id "${listing.id}", expected "listing-${number}"`);
    if (listing.antiPattern && !found[3]) {
      say(`Listing ${number} is an anti-pattern: its caption must start with "Listing ${number} (don't do this):"`);
    }
    if (!listing.antiPattern && found[3]) {
      say(`Listing ${number} says "don't do this" but lacks class "anti-pattern" (<figure class="listing anti-pattern">)`);
    }
    if (listing.antiPattern && (!/do this/i.test(listing.marker || "") || !(listing.border > 0))) {
      say(`Listing ${number} is an anti-pattern but shows no marker (the "Don't do this" label and bar of book/theme/pul.css)`);
    }
  }
  if (page.subPage) return problems;

  const exercises = facts.sections.find((s) => s.title === "Exercises");
  if (!exercises) {
    say('no <h2> "Exercises" section');
  } else {
    const text = quotes(exercises.text);
    if (!text.includes("scripts/lab check")) say('the Exercises section never names "scripts/lab check"');
    if (exercises.diffSolutions === 0) {
      say('the Exercises section has no <details class="solution"> with a diff code block (```diff, the solution patch)');
    }
    for (const id of ids[page.lab] || []) {
      if (!text.includes(`scripts/lab check ${page.lab} ${id}`)) {
        say(`the Exercises section does not list the checked exercise "${id}" (labs/${page.lab}-*/exercises.toml) ` +
            `with its command "scripts/lab check ${page.lab} ${id}"`);
      }
    }
  }
  const last = facts.sections[facts.sections.length - 1];
  if (!last) say('no <h2> at all: a chapter ends with an <h2> "Summary"');
  else if (last.title !== "Summary") say(`the last <h2> is "${last.title}", expected "Summary" (a chapter ends with its Summary)`);
  return problems;
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
  const lessons = lessonPages(fs.readFileSync(options.summary, "utf8"));
  const lessonByFile = new Map(lessons.pages.map((page) => [page.file, page]));
  const ids = exerciseIds(options.labs);
  fs.mkdirSync(options.out, { recursive: true });

  const server = await serve(options.build, options.sitePath);
  const base = `http://127.0.0.1:${server.address().port}${options.sitePath}`;
  const browser = await chromium.launch({ executablePath: options.chromium, args: CHROMIUM_ARGS, headless: true });
  const problems = [];
  let checks = 0;
  const pass = () => { checks += 1; };
  if (!lessons.sawPart) problems.push(`${options.summary}: no part "# ${LESSONS_PART}": the book conventions check found no chapters`);
  else if (lessons.pages.length === 0) problems.push(`${options.summary}: part "${LESSONS_PART}" has no ch*.md page`);
  if (options.labs && Object.keys(ids).length === 0) problems.push(`${options.labs}: no labs/NN-name/exercises.toml found`);

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
      const lesson = lessonByFile.get(chapter.file);
      let conventions = "";
      if (lesson) {
        const facts = await page.evaluate(pageFacts);
        const found = conventionProblems(lesson, facts, ids);
        if (found.length) problems.push(...found); else pass();
        const exercises = facts.sections.find((s) => s.title === "Exercises");
        conventions = `; conventions: ${facts.listings.length} listing(s), ` +
          `${exercises ? exercises.diffSolutions : 0} solution diff(s), ${found.length} problem(s)`;
      }
      const name = `${String(index + 1).padStart(2, "0")}-${chapter.file.replace(/\.html$/, "").replace(/\W+/g, "-")}.png`;
      await page.screenshot({ path: path.join(options.out, name), fullPage: true });
      console.log(`  ${chapter.file}: "${title}", ${images.length} image(s)${conventions} -> ${name}`);
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

module.exports = { lessonPages, exerciseIds, conventionProblems, LESSONS_PART };

if (require.main === module) {
  main().catch((error) => { console.error(`browser check: ${error.stack || error}`); process.exitCode = 2; });
}
