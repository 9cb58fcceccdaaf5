/**
 * The identity of a request (kube: k8s.io/apiserver/pkg/authentication/user.Info): what
 * authentication produces and authorization, admission and audit read.
 */
export interface UserInfo {
  name: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}
