/** Clicks as posthog-js ≥ 1.100 writes `$elements_chain` (quotes escaped, inline styles holding `;`, Tailwind classes). */
const BODY = 'body:nth-child="2"nth-of-type="1"';
export const CHAINS = {
  signupButton: `button.btn.btn-primary:attr__class="btn btn-primary"attr__id="signup-btn"attr__type="submit"attr_id="signup-btn"nth-child="2"nth-of-type="1"text="Create account";form.signup:attr__class="signup"attr__id="signup"attr_id="signup"nth-child="1"nth-of-type="1";div.container:attr__class="container"nth-child="1"nth-of-type="1";${BODY}`,
  pricingLink: `a:attr__href="/pricing"href="/pricing"nth-child="1"nth-of-type="1"text="Pricing";li:nth-child="3"nth-of-type="3";ul.nav:attr__class="nav"nth-child="1"nth-of-type="1";nav:nth-child="1"nth-of-type="1";${BODY}`,
  quotedText: `button:nth-child="1"nth-of-type="1"text="Say \\"hi\\"";div:attr__data-attr="greeting"nth-child="1"nth-of-type="1";${BODY}`,
  spanInButton: `span:nth-child="1"nth-of-type="1"text="Buy now";button.cta.w-1/2:attr__class="cta w-1/2"attr__data-attr="buy"nth-child="1"nth-of-type="1";div:nth-child="1"nth-of-type="1";${BODY}`,
  inlineStyle: `div.card:attr__class="card"attr__style="display: flex; gap: 4px"nth-child="1"nth-of-type="1"text="Card";${BODY}`,
  externalLink: `a.external:attr__class="external"attr__href="https://posthog.com/docs?x=1&y=2"href="https://posthog.com/docs?x=1&y=2"nth-child="2"nth-of-type="2"text="Docs";footer:nth-child="3"nth-of-type="1";${BODY}`,
  none: '',
} as const;
