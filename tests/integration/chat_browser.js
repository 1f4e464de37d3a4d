// Drives headless Chromium through puppeteer-core on conf/chat/: two chat
// pages in one room, a message typed into one (the keyboard, then Enter)
// and one with markup typed into the other; a third page joining late;
// then the room's events page (EventSource) while PHP publishes through a
// script the test placed (each PHP URL fetched in turn, its answer kept).
// Prints what each page showed as one JSON line; any failure (a page
// error, a wait that ran out) prints {"error": ...} and exits 1.
//
//   node chat_browser.js JSON   (puppeteer-core found through NODE_PATH)
//   JSON: {"base": URL, "chromium": PATH, "room": ROOM, "first": TEXT,
//          "hostile": TEXT, "php": [{"url": URL, "text": TEXT}, ...]}
"use strict";
const puppeteer = require("puppeteer-core");

// Polled (not on animation frames, which a page behind another never gets).
const WAIT = {timeout: 15000, polling: 50};
let step = "launching Chromium";  // named in the error, so a failure says where

async function main() {
    const args = JSON.parse(process.argv[2]);
    const browser = await puppeteer.launch({
        executablePath: args.chromium,
        headless: true,
        dumpio: !!process.env.CHAT_DUMPIO,
        // As root in a container there is no sandbox to have.
        args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
    });
    const seen = {pageErrors: [], requestsFailed: [], titles: []};
    const open = async path => {
        step = `opening ${path}`;
        const page = await browser.newPage();
        page.on("pageerror", e => seen.pageErrors.push(String(e)));
        page.on("requestfailed", r => seen.requestsFailed.push(r.url()));
        await page.goto(args.base + path, {waitUntil: "load", timeout: WAIT.timeout});
        await page.waitForFunction(
            () => document.getElementById("state").dataset.state === "open", WAIT);
        return page;
    };
    const showed = (page, text) => {
        step = `waiting for ${JSON.stringify(text)}`;
        return page.waitForFunction(
            t => [...document.querySelectorAll("#log .text")].some(s => s.textContent === t),
            WAIT, text);
    };
    const log = page => page.$$eval("#log li:not(.note)", items => items.map(li => {
        const part = cls => (li.querySelector(`.${cls}`) || {}).textContent || "";
        return {id: part("id"), name: part("name"), text: part("text"),
                elements: li.querySelectorAll("*").length - li.querySelectorAll("span").length};
    }));
    const typeName = async (page, name) => {
        step = `typing the name ${name}`;
        await page.bringToFront();  // keys go to the page in front
        await page.click("#name", {clickCount: 3});
        await page.keyboard.type(name);
        await page.keyboard.press("Enter");  // on to the message field
    };
    const say = async (page, text) => {
        step = `typing ${JSON.stringify(text)}`;
        await page.bringToFront();
        await page.focus("#text");
        await page.keyboard.type(text);
        await page.keyboard.press("Enter");
    };
    try {
        const alice = await open(`/#${args.room}`);
        const bob = await open(`/#${args.room}`);
        await typeName(alice, "alice");
        await say(alice, args.first);
        await showed(bob, args.first);
        await showed(alice, args.first);  // back from the hub
        await typeName(bob, "bob");
        await say(bob, args.hostile);
        await showed(alice, args.hostile);
        await showed(bob, args.hostile);  // bob's own, back from the hub: it may come later
        step = "reading the pages";
        seen.alice = await log(alice);
        seen.bob = await log(bob);
        seen.aliceField = await alice.$eval("#text", e => e.value);

        const late = await open(`/#${args.room}`);
        await showed(late, args.first);
        await showed(late, args.hostile);
        seen.late = await log(late);

        const events = await open(`/events.html#${args.room}`);
        await showed(events, args.hostile);  // the history, then what PHP sends
        seen.php = [];
        for (const {url, text} of args.php) {
            step = `fetching ${url}`;
            const r = await fetch(url, {signal: AbortSignal.timeout(WAIT.timeout)});
            seen.php.push({status: r.status, body: await r.text()});
            await showed(events, text);
            await showed(bob, text);
        }
        seen.events = await log(events);
        seen.bobAfter = await log(bob);
        for (const page of [alice, bob, late, events]) seen.titles.push(await page.title());
        console.log(JSON.stringify(seen));
    } finally {
        await browser.close();
    }
}

main().catch(e => {
    console.log(JSON.stringify({error: `${step}: ${e && e.stack || e}`}));
    process.exit(1);
});
