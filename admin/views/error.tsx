import { Layout, type PageContext } from "./layout.tsx";

export function ErrorPage(
  { ctx, status, title, message }: {
    ctx: PageContext;
    status: number;
    title: string;
    message: string;
  },
) {
  return (
    <Layout ctx={ctx} title={title}>
      <section class="card narrow">
        <p class="muted">Error {status}</p>
        <h1>{title}</h1>
        <p role="alert" data-form-error>{message}</p>
        <p>
          <a href="/admin" class="button">Back to the dashboard</a>
        </p>
      </section>
    </Layout>
  );
}
