# no node group needs anything set
