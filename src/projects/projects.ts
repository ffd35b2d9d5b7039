import { DESCRIPTION_MAX_LENGTH, NAME_MAX_LENGTH } from "../lib/limits.ts";
import { projectAggregates } from "./aggregates.ts";
import { now, takeIds } from "../kv/atomic.ts";
import {
  cachedRead,
  type CachePatch,
  changeOp,
  commitChange,
  type MaybeAsync,
} from "../kv/cache.ts";
import { NotFoundError, ValidationError } from "../kv/errors.ts";
import { getManyEntries } from "../kv/get_many.ts";
import {
  projectBySlugKey,
  projectKey,
  projectsByNamePrefix,
  projectsBySlugPrefix,
  projectsPrefix,
  retentionPolicyKey,
} from "../kv/keys.ts";
import { type CursorPage, indexPage, type PageRequest } from "../kv/paging.ts";
import { isRetentionOff, parseRetentionPolicy, type RetentionPolicy } from "./retention_policy.ts";
import type { Project, ProjectState } from "./types.ts";
import { requireSlug, requireTags, requireText, slugify } from "./validate.ts";
import type { Store } from "../kv/store.ts";

export interface ProjectInput {
  name: string;
  slug?: string;
  description?: string;
  tags?: readonly string[];
  /** The new project's retention policy (the operator's default for new projects). */
  retention?: RetentionPolicy;
}

/** Creates an active project. The slug is derived from the name when empty and must be unused. */
export async function createProject(store: Store, input: ProjectInput): Promise<Project> {
  const name = requireText("name", input.name, { min: 1, max: NAME_MAX_LENGTH });
  const slug = requireSlug(input.slug?.trim() || slugify(name));
  const description = requireText("description", input.description, {
    max: DESCRIPTION_MAX_LENGTH,
  });
  const tags = requireTags("tags", input.tags ?? []);
  let id: number | undefined;
  return await commitChange(store, async () => {
    const bySlug = await store.kv.get<number>(projectBySlugKey(slug));
    if (bySlug.value !== null) {
      throw new ValidationError("slug", `slug "${slug}" is already taken`);
    }
    // Taken once, when the project can be made: a refused one leaves no trace.
    const newId = id ??= await takeIds(store, "projects");
    const at = now();
    const project: Project = {
      id: newId,
      name,
      slug,
      description,
      tags,
      state: "active",
      created_at: at,
      updated_at: at,
    };
    // The project named too: other instances put it into their cached list (`listProjects`).
    const changed = [["project", project.id], ["project_list"]] as const;
    const op = changeOp(store, changed)
      .check(bySlug)
      .set(projectKey(project.id), project)
      .set(projectBySlugKey(slug), project.id);
    if (input.retention && !isRetentionOff(input.retention)) {
      op.set(retentionPolicyKey(project.id), parseRetentionPolicy(input.retention));
    }
    const commit = await projectAggregates(op, null, project).commit();
    return { commit, value: project, changed, patches: [projectListPatch(project)] };
  });
}

export function getProject(store: Store, id: number): MaybeAsync<Project | null> {
  return cachedRead(store, {
    name: "project",
    id: id,
    load: async () => (await store.kv.get<Project>(projectKey(id))).value,
  });
}

export function getProjectBySlug(store: Store, slug: string): MaybeAsync<Project | null> {
  return cachedRead(store, {
    name: "project_by_slug",
    id: slug,
    load: async () => {
      const id = (await store.kv.get<number>(projectBySlugKey(slug))).value;
      return id === null ? null : (await store.kv.get<Project>(projectKey(id))).value;
    },
  });
}

/**
 * The write of `project` applied to the cached project list (`listProjects`)
 * of the writing process: the project replaced, or inserted where its id
 * goes, so that one edit does not make the next read load every project.
 */
export function projectListPatch(project: Project): CachePatch {
  return {
    name: "project_list",
    id: "all",
    update: (value) => {
      const list = value as readonly Project[];
      const at = list.findIndex((other) => other.id >= project.id);
      if (at === -1) return [...list, project];
      return list[at].id === project.id ? list.with(at, project) : list.toSpliced(at, 0, project);
    },
  };
}

/** Every project, active and archived, in id order. The array is shared: do not change it. */
export function listProjects(store: Store): MaybeAsync<readonly Project[]> {
  return cachedRead(store, {
    name: "project_list",
    id: "all",
    load: async (): Promise<readonly Project[]> => {
      const projects: Project[] = [];
      for await (const entry of store.kv.list<Project>({ prefix: projectsPrefix() })) {
        projects.push(entry.value);
      }
      return projects;
    },
    // Another instance's project write: the projects it names read again, not all of them.
    refresh: {
      itemKind: "project",
      apply: async (list, ids) => {
        const entries = await getManyEntries<Project>(
          store.kv,
          ids.map((id) => projectKey(id as number)),
        );
        return entries.reduce<readonly Project[]>(
          (projects, entry, at) =>
            entry.value === null
              ? projects.filter((project) => project.id !== ids[at])
              : projectListPatch(entry.value).update(projects) as readonly Project[],
          list,
        );
      },
    },
  }) as MaybeAsync<readonly Project[]>;
}

/**
 * The projects `match` accepts, in the order of `listProjectsPage` (active
 * first, then by name case-insensitively, then id), searched in the cached
 * project list: no KV read while the list is cached.
 */
export async function searchProjects(
  store: Store,
  match: (project: Project) => boolean,
): Promise<Project[]> {
  const rows = (await listProjects(store)).filter(match).map((project) => ({
    project,
    state: project.state === "active" ? 0 : 1,
    name: project.name.toLowerCase(),
  }));
  rows.sort((a, b) =>
    a.state - b.state || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0) ||
    a.project.id - b.project.id
  );
  return rows.map(({ project }) => project);
}

/** One page of projects, active first, then by name (see paging.ts). */
export function listProjectsPage(
  store: Store,
  request: PageRequest<Project>,
): Promise<CursorPage<Project>> {
  return indexPage<Project>(store.kv, {
    ...request,
    parts: ["number", "string", "number"],
    prefix: projectsByNamePrefix(),
    reverse: false,
    recordKey: projectKey,
  });
}

/** Up to `limit` projects whose slug starts with `start`, in slug order (one range read). */
export async function searchProjectsBySlug(
  store: Store,
  { start, limit }: { start: string; limit: number },
): Promise<Project[]> {
  const prefix = projectsBySlugPrefix();
  const ids: number[] = [];
  for await (
    const entry of store.kv.list<number>(
      { start: [...prefix, start], end: [...prefix, `${start}\uffff`] },
      { limit },
    )
  ) {
    ids.push(entry.value);
  }
  const entries = await getManyEntries<Project>(store.kv, ids.map(projectKey));
  return entries.flatMap(({ value }) => value === null ? [] : [value]);
}

/** The projects of `ids` that exist, in the order of `ids`. */
export async function getProjectsByIds(store: Store, ids: readonly number[]): Promise<Project[]> {
  const entries = await getManyEntries<Project>(store.kv, ids.map(projectKey));
  return entries.flatMap(({ value }) => value === null ? [] : [value]);
}

/** Looks up many slugs at once; unknown slugs raise a ValidationError on `field`. */
export async function getProjectIdsBySlugs(
  store: Store,
  slugs: readonly string[],
  field = "project_slugs",
): Promise<number[]> {
  const entries = await getManyEntries<number>(store.kv, slugs.map(projectBySlugKey));
  return entries.map((entry, i) => {
    if (entry.value === null) throw new ValidationError(field, `unknown project "${slugs[i]}"`);
    return entry.value;
  });
}

export interface ProjectUpdate {
  name: string;
  description?: string;
  tags?: readonly string[];
}

/** Edits name, description and tags; the slug never changes. */
export async function updateProject(
  store: Store,
  id: number,
  input: ProjectUpdate,
): Promise<Project> {
  const name = requireText("name", input.name, { min: 1, max: NAME_MAX_LENGTH });
  const description = requireText("description", input.description, {
    max: DESCRIPTION_MAX_LENGTH,
  });
  const tags = requireTags("tags", input.tags ?? []);
  return await changeProject(store, id, (project) => ({ ...project, name, description, tags }));
}

export function setProjectState(store: Store, id: number, state: ProjectState): Promise<Project> {
  return changeProject(store, id, (project) => ({ ...project, state }));
}

async function changeProject(
  store: Store,
  id: number,
  change: (project: Project) => Project,
): Promise<Project> {
  return await commitChange(store, async () => {
    const entry = await store.kv.get<Project>(projectKey(id));
    if (entry.value === null) throw new NotFoundError("project not found");
    const project = { ...change(entry.value), updated_at: now() };
    const changed = [["project", id], ["project_by_slug", project.slug], ["project_list"]] as const;
    const op = changeOp(store, changed).check(entry).set(projectKey(id), project);
    const commit = await projectAggregates(op, entry.value, project).commit();
    return { commit, value: project, changed, patches: [projectListPatch(project)] };
  });
}
