/**
 * What a person is told when signing in through the OpenID Connect provider is refused or their
 * session ends (docs/sso.md): the SSO service says why (`SsoWhy`, src/sso/mod.ts), these are
 * the words.
 */
import type { SsoWhy } from "../src/sso/mod.ts";

/** The sentence for `said`, naming the provider as the settings do. */
export function ssoSentence(
  said: SsoWhy,
  { providerName, groupsClaim }: { providerName: string; groupsClaim: string },
): string {
  switch (said.why) {
    case "no_username":
      return `${providerName} did not give a user name this service can use for ` +
        `your account, so you cannot sign in here. Tell the people who run this service.`;
    case "no_role": {
      const groups = said.groups.length === 0
        ? `no "${groupsClaim}" claim came with your sign-in`
        : `your groups (${said.groups.slice(0, 20).join(", ")}) are none of them`;
      return `Your account "${said.username}" at ${providerName} is in no group that ` +
        `gives a role here: ${groups}. Ask an admin of this service to add you to one of its ` +
        `groups, or sign in as someone else.`;
    }
    case "local_account":
      return `"${said.username}" is a local account with a password here, so it cannot be ` +
        `signed in to through ${providerName}. Sign in with its password, or ask ` +
        `an admin to rename or remove it.`;
    case "other_identity":
      return `The account "${said.username}" here belongs to someone else at a provider, so you ` +
        `cannot sign in to it. Ask an admin of this service.`;
    case "last_admin":
      return `Your groups at ${providerName} would make you a ${said.role}, but ` +
        `"${said.username}" is the last admin here. Ask for another admin account first.`;
    case "foreign_answer":
      return `This answer from ${providerName} does not belong to a sign-in ` +
        `started in this browser, so it was not used. Start the sign-in again.`;
    case "used_up":
      return "This sign-in was already completed or has expired. Start it again.";
    case "not_confirmed":
      return `${providerName} did not confirm who you are, so you are not signed in. ` +
        `Try again; if it keeps happening, tell the people who run this service (the ` +
        `details are in its log).`;
    case "unreachable":
      return `${providerName} cannot be reached just now, so signing in through it ` +
        `is not possible. Try again in a while.`;
    case "groups_unconfirmed":
      return `${providerName} could not confirm your groups just now: sign in again`;
    case "other_user":
      return "the provider answered for another user";
    case "no_refresh_token":
      return `your groups are due to be checked and ${providerName} gave no refresh token: ` +
        "sign in again";
    case "renamed":
      return "the provider now names you differently: sign in again";
  }
}
