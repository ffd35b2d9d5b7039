/** Projects as stored in Deno KV (src/projects/projects.ts reads and writes them). */

export type ProjectState = "active" | "archived";

export interface Project {
  id: number;
  name: string;
  slug: string;
  description: string;
  tags: string[];
  state: ProjectState;
  created_at: string;
  updated_at: string;
}
