// Drives headless Chromium through puppeteer-core: opens the status page,
// waits until it shows a request count above zero and then until it has
// redrawn twice more with a higher count (its own fetches are requests), and
// prints what it saw as one JSON line. Any failure (a page error, a timeout)
// prints {"error": ...} and exits 1.
//
//   node status_page.js URL CHROMIUM   (puppeteer-core found through NODE_PATH)
"use strict";
const puppeteer = require("puppeteer-core");

async function main() {
    const [url, chromium] = process.argv.slice(2);
    const browser = await puppeteer.launch({
        executablePath: chromium,
        headless: true,
        // As root in a container there is no sandbox to have.
        args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
    });
    const seen = {pageErrors: [], requestsFailed: []};
    try {
        const page = await browser.newPage();
        page.on("pageerror", e => seen.pageErrors.push(String(e)));
        page.on("requestfailed", r => seen.requestsFailed.push(r.url()));
        const response = await page.goto(url, {waitUntil: "load", timeout: 15000});
        seen.status = response.status();
        seen.contentType = response.headers()["content-type"];
        const read = () => page.evaluate(() => ({
            requests: document.getElementById("requests").textContent,
            state: document.getElementById("state").textContent,
            error: document.getElementById("state").className === "error",
            updates: Number(document.getElementById("state").dataset.updates || 0),
            connections: document.querySelectorAll("#connections tr").length,
            upstreams: document.querySelectorAll("#upstreams tr").length,
        }));
        await page.waitForFunction(
            () => Number(document.getElementById("requests").textContent) > 0, {timeout: 15000});
        seen.first = await read();
        await page.waitForFunction(
            n => Number(document.getElementById("state").dataset.updates || 0) >= n,
            {timeout: 15000}, seen.first.updates + 2);
        seen.later = await read();
        console.log(JSON.stringify(seen));
    } finally {
        await browser.close();
    }
}

main().catch(e => {
    console.log(JSON.stringify({error: String(e && e.stack || e)}));
    process.exit(1);
});
