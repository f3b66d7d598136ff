import { useMemo, useState } from 'preact/hooks';
import { ApiClient } from './api/client';
import { forgetKey, storedKey, storeKey } from './session';
import { Shell } from './shell';
import { SignIn } from './sign-in';

/** Signed out: the sign-in form. Signed in: the shell, until the user signs out or the server stops accepting the key. */
export function App() {
  const [key, setKey] = useState(storedKey);
  const [notice, setNotice] = useState<string>();
  const signOut = (message?: string) => {
    forgetKey();
    setNotice(message);
    setKey(null);
  };
  const client = useMemo(
    () =>
      key &&
      new ApiClient(key, window.location.origin, () => signOut('The server no longer accepts this key: it may have been revoked. Sign in with another one.')),
    [key],
  );
  if (!client) {
    return (
      <SignIn
        notice={notice}
        onSignedIn={(value) => {
          storeKey(value);
          setNotice(undefined);
          setKey(value);
        }}
      />
    );
  }
  return <Shell client={client} onSignOut={() => signOut()} />;
}
