/**
 * The server extension's REST API (`<base_url>/nbmemory/api`) and the shapes of its answers.
 *
 * Every figure the panel shows comes from here, and the server reads it through nbmemory's read
 * model: the panel shows the numbers the CLI and the widget show.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import type { IToolMessage } from './views/message';
import type { IVocabulary } from './views/vocabulary';
import type { IUsage } from './views/xray';

/** One agent at a glance (`AgentInfo.to_json`): its figures with its usage's. */
export interface IAgent extends IUsage {
  name: string;
  messages: number;
  size: number;
  archives: number;
  last_activity: string | null;
  problems: string[];
  /** "1 message · 2 archives" */
  counts: string;
}

export interface IAgents {
  workspace: string;
  /** "files" (in the workspace folder), or the database's URL without its password. */
  store: string;
  poll_interval: number;
  agents: IAgent[];
  vocabulary: IVocabulary;
}

export interface IItem {
  index: number;
  role: string;
  timestamp: string;
  text: string;
  length: number;
  folded: boolean;
  source: string;
  provenance: IProvenance | null;
  /** A tool call or a tool's result as people read it (`text` is its stored JSON). */
  tool: IToolMessage | null;
}

/** The notebook cell that wrote a message (see answers.provenance_json). */
export interface IProvenance {
  notebook: string | null;
  cell_id: string | null;
  execution_count: number | null;
  session: string | null;
  superseded: boolean;
  superseded_by: number | null;
  label: string;
  superseded_label: string | null;
}

export interface IPage {
  total: number;
  offset: number;
  limit: number;
  items: IItem[];
}

export interface IArchive {
  name: string;
  messages: number;
  size: number;
  time: string;
}

/**
 * One compaction (`ReadModel.compactions`): the archive it wrote, the summary that replaced the
 * archived transcript, and the terms of the transcript neither the summary nor the pinned
 * notes hold (`dropped`; the archive still does).
 */
export interface ICompaction {
  archive: string;
  time: string;
  messages: number;
  tokens_before: number;
  tokens_after: number;
  kept_messages: number;
  /** The summary's first `SUMMARY_CHARS` characters; `summary_length` is the whole one's. */
  summary: string;
  summary_length: number;
  /** The first of the dropped terms (at most `MAX_DROPPED`); `dropped_total` counts them all. */
  dropped: string[];
  dropped_total: number;
  recorded: boolean;
  /** The whole next request before and after (the memory's figures are `tokens_*`). */
  request_before: number;
  request_after: number;
  /** Both figures, labelled: "memory 669 → 166 tokens · next request 2,931 → 2,428 tokens". */
  figures: string;
}

/**
 * Where a term first appears in MEMORY.md or an archive (`ReadModel.find`): the message's
 * `index` (null: nowhere) and the `offset` of the page of `limit` messages that shows it.
 */
export interface IFound {
  term: string;
  source: string;
  index: number | null;
  offset: number;
  limit: number;
}

/** What each message adds to a request (`ReadModel.message_tokens`). */
export interface IMessageTokens {
  encoding: string;
  preload: number;
  total: number;
  tokens: Record<string, number>;
}

/**
 * An answer of the API. A 304 gives the very object of the answer it confirms, so a caller can
 * tell whether it has drawn an answer by comparing objects: whether this GET brought something
 * new says nothing about that (another GET of the same path may have fetched it and not drawn).
 */
export interface IFetched<T> {
  data: T;
}

/** The server's message for a failed request, else the error as text. */
export function reason(error: unknown): string {
  return error instanceof ServerConnection.ResponseError ? error.message : String(error);
}

/** A query string of the defined values. */
export function query(params: Record<string, string | number | boolean | null | undefined>): string {
  const parts = Object.entries(params)
    .filter(([, value]) => value !== null && value !== undefined && value !== '')
    .map(([key, value]) => {
      const text = typeof value === 'boolean' ? (value ? '1' : '0') : String(value);
      return `${key}=${encodeURIComponent(text)}`;
    });
  return parts.length ? `?${parts.join('&')}` : '';
}

/** The API path of agent `name` (`agents/NAME`), with `more` path segments after it. */
export function agentPath(name: string, ...more: string[]): string {
  return ['agents', name, ...more].map(encodeURIComponent).join('/');
}

/**
 * GETs under the nbmemory API, with Jupyter's token and XSRF header. The last answer for each
 * path is kept with its ETag; the next GET sends `If-None-Match` and a 304 reuses it.
 */
export class Api {
  async get<T>(path: string): Promise<IFetched<T>> {
    const settings = ServerConnection.makeSettings();
    const url = URLExt.join(settings.baseUrl, 'nbmemory', 'api', path);
    const cached = this.cache.get(path);
    const headers: Record<string, string> = cached ? { 'If-None-Match': cached.etag } : {};
    const response = await ServerConnection.makeRequest(url, { headers }, settings);
    if (response.status === 304 && cached) {
      return { data: cached.data as T };
    }
    if (!response.ok) {
      throw await ServerConnection.ResponseError.create(response);
    }
    const data = (await response.json()) as T;
    const etag = response.headers.get('ETag');
    this.cache.delete(path);
    if (etag) {
      this.cache.set(path, { etag, data });
      while (this.cache.size > 64) {
        this.cache.delete(this.cache.keys().next().value as string);
      }
    }
    return { data };
  }

  /** GET `path` as a file: its text, content type and the file name the server suggests. */
  async download(path: string): Promise<{ text: string; type: string; filename: string }> {
    const settings = ServerConnection.makeSettings();
    const url = URLExt.join(settings.baseUrl, 'nbmemory', 'api', path);
    const response = await ServerConnection.makeRequest(url, {}, settings);
    if (!response.ok) {
      throw await ServerConnection.ResponseError.create(response);
    }
    const disposition = response.headers.get('Content-Disposition') ?? '';
    const encoded = /filename\*=UTF-8''([^;]+)/i.exec(disposition);
    const plain = /filename="([^"]+)"/i.exec(disposition);
    const filename = encoded ? decodeURIComponent(encoded[1]) : plain ? plain[1] : 'export.txt';
    const type = response.headers.get('Content-Type') ?? 'text/plain';
    return { text: await response.text(), type, filename };
  }

  /** POST `body` as JSON; the answer, or a `ResponseError` carrying the server's message. */
  async post<T>(path: string, body: unknown): Promise<T> {
    const settings = ServerConnection.makeSettings();
    const url = URLExt.join(settings.baseUrl, 'nbmemory', 'api', path);
    const response = await ServerConnection.makeRequest(
      url,
      {
        method: 'POST',
        body: JSON.stringify(body),
        headers: { 'Content-Type': 'application/json' }
      },
      settings
    );
    if (!response.ok) {
      throw await ServerConnection.ResponseError.create(response);
    }
    return (await response.json()) as T;
  }

  private readonly cache = new Map<string, { etag: string; data: unknown }>();
}
