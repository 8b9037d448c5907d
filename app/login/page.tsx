import { Suspense } from "react";
import { SignInForm } from "@/components/auth/sign-in-form";

export default function LoginPage() {
  return (
    <main className="flex min-h-screen items-center justify-center px-4">
      <Suspense>
        <SignInForm />
      </Suspense>
    </main>
  );
}
