/**
 * Debian's Chromium through playwright-core, for the admin UI tests: the
 * launch flags of the house rules, the two screen sizes every page is checked
 * at, and full-page screenshots into tests/screenshots/ (git-ignored).
 */
import { type Browser, chromium, type Page } from "playwright-core";
import { PROJECT_ROOT, SERVER_ADMIN_PASSWORD } from "./server_process.ts";

export const CHROMIUM = "/usr/bin/chromium";
export const SCREENSHOTS = `${PROJECT_ROOT}tests/screenshots`;

/** Desktop and phone, as in the review of issue 12. */
export const SCREENS = [
  { name: "desktop", width: 1366, height: 900 },
  { name: "phone", width: 390, height: 844 },
] as const;

export const hasChromium = await Deno.stat(CHROMIUM).then((info) => info.isFile, () => false);
if (!hasChromium) {
  console.warn(`admin browser tests ignored: ${CHROMIUM} not found (apt-get install chromium)`);
}

export async function launchBrowser(): Promise<Browser> {
  await Deno.mkdir(SCREENSHOTS, { recursive: true });
  return await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

/** Signs in as `admin` on the login page of the server at `base` and waits for the dashboard. */
export async function signIn(
  page: Page,
  base: string,
  password = SERVER_ADMIN_PASSWORD,
): Promise<void> {
  await page.goto(`${base}/admin/login`);
  await page.fill("#username", "admin");
  await page.fill("#password", password);
  await Promise.all([page.waitForURL(`${base}/admin`), page.click("button[type=submit]")]);
}

export async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: `${SCREENSHOTS}/${name}.png`, fullPage: true });
}

/** How far the page scrolls sideways (0 when it fits the screen). */
export async function sidewaysOverflow(page: Page): Promise<number> {
  return await page.evaluate<number>(
    "document.documentElement.scrollWidth - document.documentElement.clientWidth",
  );
}

/** Whether the element is entirely inside the visible part of the page. */
export async function inViewport(page: Page, selector: string): Promise<boolean> {
  return await page.evaluate<boolean>(`(() => {
    const node = document.querySelector(${JSON.stringify(selector)});
    if (!node) return false;
    const box = node.getBoundingClientRect();
    return box.height > 0 && box.top >= 0 && box.bottom <= innerHeight;
  })()`);
}
