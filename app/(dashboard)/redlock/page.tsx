import { RedlockView } from "@/components/redlock/redlock-view";

export default function RedlockPage() {
  return <RedlockView />;
}
