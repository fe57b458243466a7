// replaced by the hostctl implementation
