/** Small pieces shared by the admin pages. */
import type { Child, JSX } from "hono/jsx";
import { shortTime } from "../format.ts";
import { type ListPage, pageSummary, SEARCH_MAX_LENGTH } from "../listing.ts";
import type { FormError } from "../types.ts";
import { can } from "../roles.ts";
import { CsrfInput, Layout, type NavItem, type PageContext } from "./layout.tsx";

/**
 * The message at the top of a form that was sent back with an error. The
 * invalid field itself gets `autofocus` (see {@link invalidProps}), so the
 * browser scrolls the form into view however long the page is.
 */
export function FormErrorSummary({ error }: { error?: FormError | null }) {
  if (!error) return null;
  return (
    <div class="flash flash-error" role="alert" data-form-error>
      {error.message}
    </div>
  );
}

/** Props that mark an input invalid and point it at its message. */
export function invalidProps(error: FormError | null | undefined, field: string, id: string) {
  return error?.field === field
    ? { "aria-invalid": "true", "aria-describedby": `${id}-error` }
    : {};
}

/** The invalid control takes the focus on load: the browser scrolls it (and its message) into view. */
export function autofocusProps(error: FormError | null | undefined, field: string) {
  return error?.field === field ? { autofocus: true } : {};
}

export function FieldError(
  { error, field, id }: { error?: FormError | null; field: string; id: string },
) {
  if (error?.field !== field) return null;
  return <p class="field-error" id={`${id}-error`} role="alert">{error.message}</p>;
}

/** What every labelled form field has: the label, an optional hint, and its error. */
interface FieldProps {
  id: string;
  /** The form field name; also the `field` of a {@link FormError} about it. */
  name: string;
  label: Child;
  /** A small note after the label, e.g. "optional". */
  optional?: string;
  hint?: Child;
  error?: FormError | null;
}

type InputFieldProps = FieldProps & JSX.IntrinsicElements["input"];
type TextAreaFieldProps = FieldProps & JSX.IntrinsicElements["textarea"] & { value: string };

/** A labelled `<input>` in a `.field` block, with its hint and error message. */
export function InputField(
  { id, name, label, optional, hint, error, type = "text", value, ...attrs }: InputFieldProps,
) {
  return (
    <FieldBlock id={id} name={name} label={label} optional={optional} hint={hint} error={error}>
      <input
        id={id}
        name={name}
        type={type}
        value={value}
        {...attrs}
        {...describedBy({ id, name, hint, error })}
        {...autofocusProps(error, name)}
      />
    </FieldBlock>
  );
}

/** A labelled `<textarea>` in a `.field` block, with its hint and error message. */
export function TextAreaField(
  { id, name, label, optional, hint, error, value, ...attrs }: TextAreaFieldProps,
) {
  return (
    <FieldBlock id={id} name={name} label={label} optional={optional} hint={hint} error={error}>
      <textarea
        id={id}
        name={name}
        {...attrs}
        {...describedBy({ id, name, hint, error })}
        {...autofocusProps(error, name)}
      >
        {value}
      </textarea>
    </FieldBlock>
  );
}

function FieldBlock(
  { id, name, label, optional, hint, error, children }: FieldProps & { children: Child },
) {
  return (
    <div class="field">
      <label for={id}>
        {label}
        {optional && (
          <>
            {" "}
            <span class="optional">{optional}</span>
          </>
        )}
      </label>
      {children}
      {hint && <p class="hint" id={`${id}-hint`}>{hint}</p>}
      <FieldError error={error} field={name} id={id} />
    </div>
  );
}

/** The hint describes the control, unless an error message replaces it. */
function describedBy(
  { id, name, hint, error }: Pick<FieldProps, "id" | "name" | "hint" | "error">,
) {
  return {
    ...(hint ? { "aria-describedby": `${id}-hint` } : {}),
    ...invalidProps(error, name, id),
  };
}

type FieldsetFieldProps =
  & Pick<FieldProps, "id" | "name" | "error">
  & { legend: Child; children: Child }
  & JSX.IntrinsicElements["fieldset"];

/**
 * A `<fieldset>` (class `field` unless given) of the controls for one form field, such as
 * a group of choices: its legend, the controls (`children`) and the field's error message
 * (`{id}-error`), which an invalid fieldset points at.
 */
export function FieldsetField(
  { id, name, legend, error, children, ...attrs }: FieldsetFieldProps,
) {
  return (
    <fieldset class="field" {...attrs} {...invalidProps(error, name, id)}>
      <legend>{legend}</legend>
      {children}
      <FieldError error={error} field={name} id={id} />
    </fieldset>
  );
}

/**
 * The optional expiry of a credential: a `datetime-local` input for `expires_at`,
 * which the server reads as UTC.
 */
export function ExpiresField(
  props: Omit<FieldProps, "name" | "label"> & JSX.IntrinsicElements["input"],
) {
  return <InputField {...props} name="expires_at" label="Expires" type="datetime-local" />;
}

/**
 * The text input for a comma-separated list of project slugs (`project_slugs`);
 * `list` names the `<datalist>` that suggests slugs.
 */
export function ProjectSlugsInput(
  { id, slugs, ...attrs }:
    & { id: string; slugs: readonly string[] }
    & JSX.IntrinsicElements["input"],
) {
  return (
    <input
      id={id}
      name="project_slugs"
      type="text"
      value={slugs.join(", ")}
      autocapitalize="none"
      spellcheck={false}
      {...attrs}
    />
  );
}

/** A checkbox with its label beside it (`.checkbox`); `value` defaults to the browser's `on`. */
export function CheckboxField(
  { id, name, value, checked, label }: {
    id: string;
    name: string;
    value?: string;
    checked: boolean;
    label: Child;
  },
) {
  return (
    <div class="checkbox">
      <input type="checkbox" id={id} name={name} value={value} checked={checked} />
      <label for={id}>{label}</label>
    </div>
  );
}

/**
 * A responsive `.data-table` with a header cell per column; `actions` adds a last,
 * visually hidden "Actions" column. Cells carry `data-label` with their column name,
 * which the narrow-screen CSS shows.
 */
export function DataTable(
  { columns, actions, children }: { columns: string[]; actions?: boolean; children: Child },
) {
  return (
    <div class="table-wrap">
      <table class="data-table">
        <thead>
          <tr>
            {columns.map(HeaderCell)}
            {actions && (
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

/** The last cell of a row in a {@link DataTable} with `actions`: the row's buttons and links. */
export function ActionsCell({ children }: { children: Child }) {
  return (
    <td data-label="Actions">
      <div class="row-actions">{children}</div>
    </td>
  );
}

function HeaderCell(column: string) {
  return <th scope="col">{column}</th>;
}

/**
 * A page's heading row (`.page-head`): the `<h1>` with the `badges` beside the title
 * (state, "latest"), and the `slug` line (slug, key prefix or id) when there is one.
 */
export function PageHead(
  { title, badges, slug }: { title: Child; badges?: Child; slug?: Child },
) {
  return (
    <div class="page-head">
      <h1>
        {title}
        {badges && <>{" "}{badges}</>}
      </h1>
      {slug && <code class="slug">{slug}</code>}
    </div>
  );
}

/** A form that is just one button posting to `action` (archive, enable, …), with its CSRF token. */
export function PostButton(
  { action, csrfToken, label, buttonClass = "button button-small" }: {
    action: string;
    csrfToken?: string;
    label: string;
    buttonClass?: string;
  },
) {
  return (
    <form method="post" action={action} class="inline-form">
      <CsrfInput token={csrfToken} />
      <button type="submit" class={buttonClass}>{label}</button>
    </form>
  );
}

/** Shorter text fits any column whole: it gets no break points. */
const BREAKABLE_LENGTH = 16;

/**
 * A slug, version, file name or URL that may wrap only after its own
 * separators (`/ - _ . + @ : ? & = ,`): a `<wbr>` after each (from
 * BREAKABLE_LENGTH characters), so a narrow column breaks it between its
 * parts rather than inside one.
 */
export function Breakable({ text }: { text: string }) {
  if (text.length < BREAKABLE_LENGTH) return <>{text}</>;
  const parts = text.split(/(?<=[/\-_.+@:?&=,])(?![/\-_.+@:?&=,])/);
  return (
    <>
      {parts.map((part, i) =>
        i === 0 ? part : (
          <>
            <wbr />
            {part}
          </>
        )
      )}
    </>
  );
}

/**
 * A time as `shortTime` writes it: the day and the hour each kept whole
 * (a table may put the hour on a line of its own, never break the date).
 */
export function Time({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span class="muted">never</span>;
  const text = shortTime(iso);
  const space = text.indexOf(" ");
  if (space < 0) return <time datetime={iso}>{text}</time>;
  return (
    <time datetime={iso}>
      <span class="nowrap">{text.slice(0, space)}</span>{" "}
      <span class="nowrap">{text.slice(space + 1)}</span>
    </time>
  );
}

/**
 * Its children only when the signed-in account's role may use `route` (`METHOD /admin/path`, as
 * registered; admin/roles.ts `can`): a control nobody can use is not shown.
 */
export function IfCan(
  { ctx, route, children }: { ctx: PageContext; route: string; children: Child },
) {
  return can(ctx.role, route) ? <>{children}</> : null;
}

export function StateBadge({ state }: { state: string }) {
  return <span class={`badge badge-${state}`}>{state}</span>;
}

export function TagList({ tags }: { tags: readonly string[] }) {
  if (tags.length === 0) return <span class="muted">none</span>;
  return (
    <ul class="tag-list">
      {tags.map(TagItem)}
    </ul>
  );
}

function TagItem(tag: string) {
  return <li class="tag">{tag}</li>;
}

/**
 * A search box for a list page: a GET form with the `q` parameter, so a search
 * is a link like any other and works without JavaScript.
 */
export function SearchBox(
  { action, q, label, placeholder }: {
    action: string;
    q: string;
    label: string;
    placeholder: string;
  },
) {
  return (
    <form method="get" action={action} class="search" role="search">
      <label for="search-q" class="visually-hidden">{label}</label>
      <input
        id="search-q"
        name="q"
        type="search"
        value={q}
        placeholder={placeholder}
        maxlength={SEARCH_MAX_LENGTH}
        autocapitalize="none"
        spellcheck={false}
      />
      <button type="submit" class="button">Search</button>
      {q && <a href={action} class="button">Clear</a>}
    </form>
  );
}

/** The pager under a searchable list: its links and "1–50 of 120 keys". */
export function ListPager(
  { list, total, noun, newerLabel, olderLabel }: {
    list: ListPage<unknown>;
    total: number;
    noun: string;
    newerLabel?: string;
    olderLabel?: string;
  },
) {
  return (
    <Pager
      newer={list.newer}
      older={list.older}
      newerLabel={newerLabel}
      olderLabel={olderLabel}
      summary={pageSummary(list, total, noun)}
    />
  );
}

/**
 * "Newer" / "older" links between pages of a list, as `rel="prev"` and
 * `rel="next"` (the links are null on the first and the last page).
 */
export function Pager(
  { newer, older, newerLabel = "Newer", olderLabel = "Older", summary }: {
    newer: string | null;
    older: string | null;
    newerLabel?: string;
    olderLabel?: string;
    summary?: string;
  },
) {
  if (newer === null && older === null && !summary) return null;
  return (
    <nav class="pager" aria-label="Pages">
      {newer !== null && <a href={newer} rel="prev" class="button">← {newerLabel}</a>}
      {summary && <span class="muted pager-summary">{summary}</span>}
      {older !== null && <a href={older} rel="next" class="button">{olderLabel} →</a>}
    </nav>
  );
}

/**
 * The one-time secret of a new credential as selectable text, with a copy button
 * that stays hidden until the page script shows it (`data-needs-script`).
 * `data` carries the element's `data-*` attributes the script and tests read.
 */
export function SecretCopyRow(
  { id, secret, data, labelledBy, copyLabel }: {
    id: string;
    secret: string;
    data: Record<`data-${string}`, string>;
    labelledBy?: string;
    copyLabel: string;
  },
) {
  return (
    <div class="copy-row">
      <code id={id} class="key-value" aria-labelledby={labelledBy} {...data}>
        {secret}
      </code>
      <button
        type="button"
        class="button button-primary"
        data-copy-key={`#${id}`}
        data-needs-script
        hidden
      >
        {copyLabel}
      </button>
    </div>
  );
}

/**
 * What another admin saved meanwhile (`children`: the facts as `<dt>`/`<dd>`),
 * shown above the form that still holds what was entered.
 */
export function EditConflictNotice({ what, children }: { what: string; children?: Child }) {
  return (
    <div class="flash flash-warning" role="alert" data-edit-conflict>
      <p>
        Someone else changed this {what}{" "}
        after you opened the form, so nothing was saved. It now reads:
      </p>
      <dl class="facts">{children}</dl>
      <p>Your values are still in the form below: save again to replace theirs.</p>
    </div>
  );
}

/**
 * The page shown once, right after a credential is created: the title, the
 * success `notice` and the card (`children`) that holds the secret.
 */
export function SecretCreatedLayout(
  { ctx, title, nav, notice, children }: {
    ctx: PageContext;
    title: string;
    nav: NavItem;
    notice: Child;
    children?: Child;
  },
) {
  return (
    <Layout ctx={ctx} title={title} nav={nav}>
      <h1>{title}</h1>
      <section class="card key-reveal">
        <div class="flash flash-success" role="status">{notice}</div>
        {children}
      </section>
    </Layout>
  );
}
