# Real kube-apiserver + etcd, built from Go modules by the nested module
# test/kubeapi and cached under .cache/kube/<version>.
.PHONY: kube-assets
kube-assets:
	./test/kubeapi/build.sh $(KUBE_ASSETS)
