import { ZookeeperView } from "@/components/zookeeper/zookeeper-view";

export default function ZookeeperPage() {
  return <ZookeeperView />;
}
