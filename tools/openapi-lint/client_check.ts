// What a client generated from shortener/openapi.json (openapi-typescript)
// must allow without a cast: reading a link's history, both answers of
// the batch endpoint told apart by their mode, an import request and its
// answer, and a link's and the overview's click stats, JSON and CSV.
// scripts/openapi_lint.sh generates api.d.ts and type-checks this file
// with tsc --strict; a cast (`as`, `any`, a non-null `!`) here would
// defeat it, so the script refuses them.
import type { operations } from "./api";

type JSONOf<K extends keyof operations, S extends keyof operations[K]["responses"]> =
  operations[K]["responses"][S] extends { content: { "application/json": infer T } } ? T : never;
type CSVOf<K extends keyof operations> =
  operations[K]["responses"] extends { 200: { content: { "text/csv": infer T } } } ? T : never;

type History = JSONOf<"getLinkHistory", 200>;
type BatchAnswer = JSONOf<"createLinks", 200>;
type BatchBody = NonNullable<operations["createLinks"]["requestBody"]>["content"]["application/json"];
type LinkStats = JSONOf<"getLinkStats", 200>;
type Overview = JSONOf<"getClickOverview", 200>;

// Each type must be a real one: an answer the document lost would make it
// never, a schema without a type any or unknown, and the checks below would
// pass on anything.
type Real<T> = [T] extends [never] ? "never" : 0 extends 1 & T ? "untyped" : unknown extends T ? "opaque" : "real";
export const real: Real<History | BatchAnswer | BatchBody | LinkStats | Overview>[] = ["real"];
export const realEach: [Real<History>, Real<BatchAnswer>, Real<BatchBody>, Real<LinkStats>, Real<Overview>,
  Real<CSVOf<"getLinkStats">>, Real<CSVOf<"getClickOverview">>] = ["real", "real", "real", "real", "real", "real", "real"];

export function versions(h: History): number[] {
  return h.history.map((e) => e.version);
}

export function changedFields(h: History): string[] {
  return h.history.flatMap((e) => Object.keys(e.changes));
}

export function nextPage(h: History): string | null {
  return h.next_cursor ?? null;
}

// The two answers of POST /links/batch, told apart by mode alone.
export function createdCount(a: BatchAnswer): number {
  if (a.mode === "create") {
    let n = 0;
    for (const r of a.results) {
      if ("link" in r) {
        n += r.link.code.length > 0 ? 1 : 0;
      }
    }
    return n;
  }
  return a.dry_run ? 0 : a.created;
}

export function refusedFields(a: BatchAnswer): string[] {
  if (a.mode === "import") {
    return a.results.filter((r) => r.result === "refused").map((r) => r.field ?? "");
  }
  return a.results.flatMap((r) => ("error" in r ? [r.error] : []));
}

export const importBody: BatchBody = {
  mode: "import",
  dry_run: true,
  links: [{ code: "kept-code", long_url: "https://example.com/a" }],
};

export const createBody: BatchBody = {
  links: [{ long_url: "https://example.com/b" }],
};

export function people(s: LinkStats): number {
  return s.people + s.hourly.reduce((n, h) => n + h.people, 0) + s.referrers.length;
}

export function topLink(o: Overview): string | undefined {
  return o.links[0]?.code;
}

export function csvLines(a: CSVOf<"getLinkStats">, b: CSVOf<"getClickOverview">): number {
  return a.split("\n").length + b.split("\n").length;
}
